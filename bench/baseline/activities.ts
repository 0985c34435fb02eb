import OpenAI from 'openai';

export function createBaselineActivities(baseURL: string) {
  const client = new OpenAI({ apiKey: 'sk-bench', baseURL, maxRetries: 0 });
  return {
    async complete(prompt: string): Promise<string> {
      const res = await client.chat.completions.create({ model: 'bench', messages: [{ role: 'user', content: prompt }] });
      return res.choices[0]?.message.content ?? '';
    },
  };
}
export type BaselineActivities = ReturnType<typeof createBaselineActivities>;
