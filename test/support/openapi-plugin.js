/**
 * ts-jest runs the @nestjs/swagger CLI plugin with the options `nest build` uses (nest-cli.json), so
 * the OpenAPI document the tests read is the one the build serves: property types come from the DTOs'
 * TypeScript types, not from hand-written decorators.
 */
const plugin = require('@nestjs/swagger/plugin');
const { options } = require('../../nest-cli.json').compilerOptions.plugins.find(
  (entry) => entry.name === '@nestjs/swagger',
);

module.exports = {
  name: 'nestjs-swagger-plugin',
  version: 1,
  // Jest's global setup is transpiled file by file, without a program: it needs no OpenAPI metadata.
  factory: (compiler) =>
    compiler.program ? plugin.before(options, compiler.program) : () => (sourceFile) => sourceFile,
};
