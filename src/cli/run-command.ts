/**
 * Runs a helper command's `main` as the process: exits with its code, or prints `<prefix>: <message>` and exits 1 when
 * it throws (the helpers' usage errors return their own codes; anything thrown is a failure).
 */
export function runCommand(prefix: string, main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: Error) => {
      console.error(`${prefix}: ${err.message}`);
      process.exit(1);
    },
  );
}
