/** The health check's activity (workflows/ping.ts): proves a worker runs activities. */
export function createHealthActivities() {
  return {
    async echo(input: { text: string }): Promise<string> {
      return input.text;
    },
  };
}

export type HealthActivities = ReturnType<typeof createHealthActivities>;
