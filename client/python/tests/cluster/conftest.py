# SPDX-License-Identifier: Apache-2.0
"""conftest.py - the fixtures: the cluster (clusterlib.Cluster, from the
environment python.sh sets) and one escrow.Client for the whole session."""

import pytest

import escrow
from clusterlib import Cluster


@pytest.fixture(scope="session")
def cluster():
    return Cluster()


@pytest.fixture(scope="session")
def client(cluster):
    with escrow.Client(**cluster.options()) as c:
        yield c
