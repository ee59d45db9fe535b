import { getConfigToken } from '@nestjs/config';
import { getMetadataStorage } from 'class-validator';
import { ConfigurationError, CORE_VARIABLES, readVariables } from './environment';

/**
 * The configuration an extension declares: its variables as a class of rules, written as the core
 * writes EnvironmentVariables (a default and class-validator rules per variable, `@Transform(toInt)`
 * for numbers), and the slice its providers inject, as a core namespace selects one:
 *
 *   class MaintenanceWindowVariables {
 *     @Transform(toInt) @IsInt() @Min(1) @Max(1440)
 *     MAINTENANCE_WINDOW_MINUTES = 60;
 *   }
 *   export const maintenanceWindowConfig = extensionConfig('maintenance-window', MaintenanceWindowVariables,
 *     (env) => ({ minutes: env.MAINTENANCE_WINDOW_MINUTES }));
 *
 *   constructor(@Inject(maintenanceWindowConfig.KEY) window: ConfigOf<typeof maintenanceWindowConfig>)
 *
 * The variables come from where the core's come from (`.env` and the environment, a test's `env`) and
 * are validated at start with the core's, a bad one stopping it with the same kind of line naming it.
 */
export interface ExtensionConfig<T extends object = object> {
  /** The extension's name (its descriptor must carry the same). */
  readonly extension: string;
  /** The injection token of its slice. */
  readonly KEY: string;
  /** Every variable it reads, each starting with the extension's name (`maintenance-window`: `MAINTENANCE_WINDOW_`). */
  readonly variables: readonly string[];
  /** The slice from the given variables (defaults for those unset), or one problem per bad variable. */
  read(raw: Record<string, string | undefined>): { config: T } | { problems: string[] };
}

const VARIABLE = /^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$/;

/** `maintenance-window` → `MAINTENANCE_WINDOW_`: an extension's variables cannot be the core's or another's. */
const variablePrefixOf = (extension: string): string => `${extension.toUpperCase().replace(/-/g, '_')}_`;

/** The properties of a class of rules: those with a default, and those with rules only (optional, none). */
function variablesOf(Variables: new () => object): string[] {
  const ruled = getMetadataStorage()
    .getTargetValidationMetadatas(Variables, '', true, false)
    .map(({ propertyName }) => propertyName);
  return [...new Set([...Object.keys(new Variables()), ...ruled])];
}

export function extensionConfig<V extends object, T extends object>(
  extension: string,
  Variables: new () => V,
  select: (variables: V) => T,
): ExtensionConfig<T> {
  const variables = variablesOf(Variables);
  const prefix = variablePrefixOf(extension);
  // Checked where it is declared, so a mistake names the file that made it.
  for (const name of variables) {
    if (!VARIABLE.test(name) || !name.startsWith(prefix)) {
      throw new Error(
        `extension "${extension}": variable ${name} must be UPPER_CASE and start with ${prefix}`,
      );
    }
    if (CORE_VARIABLES.includes(name)) {
      throw new Error(`extension "${extension}": variable ${name} is one of Gatehouse's own`);
    }
  }
  if (!variables.length) throw new Error(`extension "${extension}": its configuration declares no variable`);
  return Object.freeze({
    extension,
    // Not a core namespace's name: an extension named like one (`audit`) would otherwise take its token.
    KEY: getConfigToken(`extension:${extension}`),
    variables,
    read(raw: Record<string, string | undefined>) {
      const { values, problems } = readVariables(Variables, variables, raw);
      return problems.length ? { problems } : { config: Object.freeze(select(values)) };
    },
  });
}

/**
 * Every extension's slice from the variables an instance was started with, or one ConfigurationError
 * listing each bad variable of them all.
 */
export function readExtensionConfigs(
  configs: readonly ExtensionConfig[],
  raw: Record<string, string | undefined>,
): Map<ExtensionConfig, object> {
  const slices = new Map<ExtensionConfig, object>();
  const problems: string[] = [];
  const owners = new Map<string, string>();
  for (const config of configs) {
    for (const name of config.variables) {
      const owner = owners.get(name);
      if (owner && owner !== config.extension) {
        throw new Error(`extensions "${owner}" and "${config.extension}" both declare ${name}`);
      }
      owners.set(name, config.extension);
    }
    const read = config.read(raw);
    if ('config' in read) slices.set(config, read.config);
    else problems.push(...read.problems);
  }
  if (problems.length) throw new ConfigurationError(problems);
  return slices;
}
