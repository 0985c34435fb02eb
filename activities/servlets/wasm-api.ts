/**
 * Node has the WebAssembly global at run time, but this project's TypeScript libs (ES2022, no DOM) do not
 * declare it. These are the few members the servlet host uses, typed here rather than pulling the DOM lib into
 * every file.
 */
export type CompiledModule = object & { readonly __compiledModule?: never };

interface Descriptor {
  name: string;
  kind: 'function' | 'table' | 'memory' | 'global' | 'tag';
}

interface WebAssemblyApi {
  compile(bytes: Uint8Array): Promise<CompiledModule>;
  Module: {
    exports(module: CompiledModule): Descriptor[];
    imports(module: CompiledModule): Array<Descriptor & { module: string }>;
  };
}

export const wasm = (globalThis as unknown as { WebAssembly: WebAssemblyApi }).WebAssembly;
