// Configuration comes from environment variables, is read once at start and validated there:
// a bad value stops start-up with a message that names the variable. Nothing else in the code
// reads process.env.

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface Config {
  port: number;
  host: string;
  databasePath: string;
  logLevel: LogLevel;
  /** Largest request body the client API accepts, in bytes. */
  bodyLimit: number;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

type Env = Record<string, string | undefined>;

interface Setting<T> {
  default: string;
  parse: (value: string) => T | undefined;
  expected: string;
}

const SIZE_UNITS: Record<string, number> = { b: 1, kb: 1024, mb: 1024 * 1024 };

export function parseSize(value: string): number | undefined {
  const match = /^(\d+)\s*(b|kb|mb)$/i.exec(value.trim());
  if (!match) return undefined;
  const bytes = Number(match[1]) * (SIZE_UNITS[match[2]!.toLowerCase()] ?? 0);
  return Number.isSafeInteger(bytes) && bytes > 0 ? bytes : undefined;
}

function parsePort(value: string): number | undefined {
  if (!/^\d{1,5}$/.test(value)) return undefined;
  const port = Number(value);
  return port <= 65535 ? port : undefined;
}

function parseNonEmpty(value: string): string | undefined {
  return value.trim() === '' ? undefined : value;
}

function parseLogLevel(value: string): LogLevel | undefined {
  return (LOG_LEVELS as readonly string[]).includes(value) ? (value as LogLevel) : undefined;
}

const SETTINGS = {
  PORT: { default: '3000', parse: parsePort, expected: 'a port number from 0 to 65535' },
  HOST: { default: '127.0.0.1', parse: parseNonEmpty, expected: 'an address to listen on' },
  DATABASE_PATH: {
    default: './data/leadhooks.db',
    parse: parseNonEmpty,
    expected: 'a file path (or :memory:)',
  },
  LOG_LEVEL: { default: 'info', parse: parseLogLevel, expected: `one of ${LOG_LEVELS.join(', ')}` },
  BODY_LIMIT: {
    default: '16kb',
    parse: parseSize,
    expected: 'a size with a unit, such as 16kb or 1mb',
  },
} satisfies Record<string, Setting<unknown>>;

export type SettingName = keyof typeof SETTINGS;

/** The variables, their defaults and what they accept, for docs and `.env.example`. */
export const SETTING_DOCS = Object.entries(SETTINGS).map(([name, s]) => ({
  name,
  default: s.default,
  expected: s.expected,
}));

function read<K extends SettingName>(env: Env, name: K): NonNullable<ReturnType<(typeof SETTINGS)[K]['parse']>> {
  const setting: Setting<unknown> = SETTINGS[name];
  // An empty value counts as unset, as in most .env loaders.
  const raw = env[name] || setting.default;
  const value = setting.parse(raw);
  if (value === undefined) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} is not valid: expected ${setting.expected}`);
  }
  return value as NonNullable<ReturnType<(typeof SETTINGS)[K]['parse']>>;
}

export function loadConfig(env: Env = process.env): Config {
  return {
    port: read(env, 'PORT'),
    host: read(env, 'HOST'),
    databasePath: read(env, 'DATABASE_PATH'),
    logLevel: read(env, 'LOG_LEVEL'),
    bodyLimit: read(env, 'BODY_LIMIT'),
  };
}
