// SPDX-License-Identifier: Apache-2.0
// native.js - loads the addon built by npm install (scripts/build.js).
'use strict';

const path = require('node:path');

const file = path.join(__dirname, '..', 'build', 'escrow.node');
try {
  module.exports = require(file);
} catch (err) {
  err.message = `escrow: cannot load ${file} (was npm install run in the package?): ${err.message}`;
  throw err;
}
