import type { GatehouseExtension } from './extension';

/**
 * The extensions this deployment runs, one line each: the API (main.ts), the worker (worker.ts), the
 * OpenAPI document (openapi.ts) and the migration CLI (ormconfig.ts) all load this one list, so an
 * extension registered here is wired in every process. docs/extending.md walks through four
 * examples (examples/extensions/): their tests load them, and CI runs the whole suite once with them in
 * this list (scripts/deploy-example-extensions.sh), which it otherwise never names.
 *
 * The built-in agent types (echo, http) are not listed here: the contract promises them on every
 * server, so they stay in AgentsModule, where removing this list's lines cannot take them away.
 */
export const EXTENSIONS: readonly GatehouseExtension[] = [];
