import crypto from 'node:crypto';
import { ServletError } from './errors';
import { capMemory, PAGE_BYTES } from './memory-cap';
import { wasm, type CompiledModule } from './wasm-api';

/** The functions the servlet ABI requires (spec/compat.md, "Module ABI"). */
export const REQUIRED_EXPORTS = ['describe', 'call'] as const;

/** A module is stored and cached under the sha256 (hex) of its bytes as published. */
export function contentAddress(bytes: Uint8Array): string {
  return crypto.createHash('sha256').update(bytes).digest('hex');
}

export function memoryPages(maxMemoryMb: number): number {
  return Math.max(1, Math.floor((maxMemoryMb * 1024 * 1024) / PAGE_BYTES));
}

/**
 * Compiles a servlet with its memory capped. Throws ServletError when the bytes do not compile, need more memory
 * than the cap, import their memory, or lack `describe` or `call`.
 */
export async function compileServlet(bytes: Uint8Array, maxMemoryMb: number): Promise<CompiledModule> {
  let module: CompiledModule;
  try {
    module = await wasm.compile(capMemory(bytes, memoryPages(maxMemoryMb)));
  } catch (err) {
    const text = err instanceof Error ? err.message.replace(/^WebAssembly\.compile\(\): /, '') : String(err);
    throw new ServletError(`module does not compile: ${text}`);
  }
  const functions = new Set(wasm.Module.exports(module).filter((e) => e.kind === 'function').map((e) => e.name));
  const missing = REQUIRED_EXPORTS.filter((name) => !functions.has(name));
  if (missing.length > 0) {
    throw new ServletError(`module does not export ${missing.map((m) => `"${m}"`).join(' and ')} (a servlet exports describe and call)`);
  }
  const memoryImport = wasm.Module.imports(module).find((i) => i.kind === 'memory');
  if (memoryImport) {
    throw new ServletError(`module imports its memory (${memoryImport.module}.${memoryImport.name}); a servlet must define its own`);
  }
  return module;
}
