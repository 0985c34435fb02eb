/** The one place the tests read their own environment: which tools to use, or which servers to use instead. */
export const testEnv = {
  temporalCli: process.env.TEMPORAL_CLI,
  ferretdbBin: process.env.FERRETDB_BIN,
  mongoUrl: process.env.MONGO_URL,
  temporalAddress: process.env.TEMPORAL_ADDRESS,
  temporalNamespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
  /** Python with mcp-run installed (scripts/test.sh makes the virtual environment). */
  python: process.env.PTR_TEST_PYTHON,
};
