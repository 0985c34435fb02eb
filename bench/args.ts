/**
 * The bench's command line: part names, switches (`--profile`, `--temporal-memory`, `--cluster`, `--tracing`) and
 * options that take a value (`--scale-sizes 32,256` or `--scale-sizes=32,256`). Throws, naming the argument, on an
 * unknown option or a value that is not a list of positive integers.
 */
export const SWITCHES = ['--profile', '--temporal-memory', '--cluster', '--tracing'] as const;
export const OPTIONS = ['--scale-sizes', '--scale-runs', '--flood'] as const;
type Option = (typeof OPTIONS)[number];

export interface BenchArgs {
  parts: string[];
  switches: Set<string>;
  /** An option's value as positive integers (`--scale-sizes 32,256`: [32, 256]); undefined when not given. */
  numbers: (option: Option) => number[] | undefined;
}

export function parseArgs(argv: string[]): BenchArgs {
  const parts: string[] = [];
  const switches = new Set<string>();
  const values = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith('-')) {
      parts.push(arg);
      continue;
    }
    const [name, inline] = arg.split('=', 2) as [string, string | undefined];
    if ((SWITCHES as readonly string[]).includes(name) && inline === undefined) switches.add(name);
    else if ((OPTIONS as readonly string[]).includes(name)) {
      const value = inline ?? argv[++i];
      if (value === undefined) throw new Error(`${name}: expected a value, e.g. ${name} 32,256`);
      values.set(name, value);
    } else throw new Error(`unknown option "${arg}"; the options are ${[...SWITCHES, ...OPTIONS].join(', ')}`);
  }
  const numbers = (option: Option) => {
    const value = values.get(option);
    if (value === undefined) return undefined;
    const list = value.split(',').map((n) => Number(n.trim()));
    if (list.length === 0 || list.some((n) => !Number.isInteger(n) || n <= 0)) throw new Error(`${option}: expected positive integers separated by commas, got "${value}"`);
    return list;
  };
  for (const option of values.keys()) numbers(option as Option);
  return { parts, switches, numbers };
}
