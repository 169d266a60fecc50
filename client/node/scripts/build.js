#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// build.js - npm install's build step: CMake builds build/escrow.node from
// src/ with the Node-API headers of the node-api-headers package (nothing
// is downloaded) and libescrow as CMakeLists.txt says (today: the build
// tree named by ESCROW_BUILD_DIR, default build/ of the source tree).
//
// Environment: ESCROW_BUILD_DIR (libescrow's build tree), CMAKE (the cmake
// to run, default `cmake`), ESCROW_NODE_BUILD_TYPE (default Release).
'use strict';

const { spawnSync } = require('node:child_process');
const path = require('node:path');
const { include_dir: napiInclude } = require('node-api-headers');

const pkgDir = path.resolve(__dirname, '..');
const buildDir = path.join(pkgDir, 'build');
const cmake = process.env.CMAKE || 'cmake';

function run(args) {
  const r = spawnSync(cmake, args, { stdio: 'inherit' });
  if (r.error) {
    console.error(`escrow: cannot run ${cmake}: ${r.error.message} (install cmake)`);
    process.exit(1);
  }
  if (r.status !== 0) {
    console.error(`escrow: ${cmake} ${args.join(' ')} exited ${r.status}`);
    process.exit(1);
  }
}

const configure = [
  '-S', pkgDir, '-B', buildDir,
  `-DNODE_API_INCLUDE_DIR=${napiInclude}`,
  `-DCMAKE_BUILD_TYPE=${process.env.ESCROW_NODE_BUILD_TYPE || 'Release'}`,
];
if (process.env.ESCROW_BUILD_DIR) {
  configure.push(`-DESCROW_BUILD_DIR=${path.resolve(process.env.ESCROW_BUILD_DIR)}`);
}
run(configure);
run(['--build', buildDir, '-j', '2']);
