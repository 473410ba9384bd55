import { isProviderKind, providerKinds, type ProviderKind } from '../../common/model-route';

/** Settings of one load-test run, from `--name value` flags; every one has a default that finishes in minutes. */
export interface LoadTestOptions {
  /** Guest users, each signing in, uploading one photo and creating `perUser` generations. */
  users: number;
  perUser: number;
  /** Users start spread evenly over this many seconds. */
  rampS: number;
  /** The kind of the provider accounts: the simulator speaks its protocol, the catalog's effects are routed on it. */
  kind: ProviderKind;
  /** Provider accounts × slots per account, task latency and failure share of the simulator. */
  accounts: number;
  slots: number;
  latencyMs: number;
  failureRate: number;
  /** One entry per service process: its roles, e.g. `web worker media`, or `all`. */
  processes: string[];
  /** The run gives up waiting for terminal statuses after this long. */
  deadlineS: number;
  outDir: string;
  effect: string;
}

export const defaults: LoadTestOptions = {
  users: 100,
  perUser: 2,
  rampS: 5,
  kind: 'simulator',
  accounts: 3,
  slots: 4,
  latencyMs: 2000,
  failureRate: 0.05,
  processes: ['web worker media'],
  deadlineS: 240,
  outDir: '.data/loadtest',
  effect: 'winter-portrait',
};

const usage = `usage: node dist/scripts/loadtest.js [--users N] [--per-user G] [--ramp-s S] [--kind simulator|replicate|fal] [--accounts M] [--slots K]
       [--latency-ms L] [--failure-rate F] [--process "web worker media"]... [--deadline-s S] [--out DIR] [--effect SLUG]`;

export function parseOptions(argv: string[]): LoadTestOptions {
  const options: LoadTestOptions = { ...defaults, processes: [] };
  const numbers: Record<string, keyof LoadTestOptions> = {
    '--users': 'users', '--per-user': 'perUser', '--ramp-s': 'rampS', '--accounts': 'accounts', '--slots': 'slots',
    '--latency-ms': 'latencyMs', '--failure-rate': 'failureRate', '--deadline-s': 'deadlineS',
  };
  for (let index = 0; index < argv.length; index += 1) {
    const flag = argv[index];
    const value = argv[index + 1];
    if (flag === '--help' || flag === '-h') throw new Error(usage);
    if (value === undefined) throw new Error(`${flag} needs a value\n${usage}`);
    index += 1;
    if (flag in numbers) {
      const number = Number(value);
      if (!Number.isFinite(number) || number < 0) throw new Error(`${flag} must be a number >= 0`);
      (options as unknown as Record<string, number>)[numbers[flag]] = number;
    } else if (flag === '--process') options.processes.push(value);
    else if (flag === '--out') options.outDir = value;
    else if (flag === '--effect') options.effect = value;
    else if (flag === '--kind') {
      if (!isProviderKind(value)) throw new Error(`--kind takes ${providerKinds.join(', ')}, not ${value}`);
      options.kind = value;
    }
    else throw new Error(`unknown flag ${flag}\n${usage}`);
  }
  if (!options.processes.length) options.processes = defaults.processes;
  if (!options.processes.some((roles) => /\b(web|all)\b/.test(roles))) throw new Error('one process must have the web role');
  if (options.perUser < 1 || options.users < 1 || options.accounts < 1 || options.slots < 1) throw new Error('users, per-user, accounts and slots must be >= 1');
  if (options.failureRate > 1) throw new Error('--failure-rate is a share, 0..1');
  return options;
}
