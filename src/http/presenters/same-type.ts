/**
 * Compile-time checks that a view schema's type and a type declared elsewhere (the workflow's, which cannot import
 * zod, or a store function's answer) describe the same values: `Expect<Same<A, B>>` fails to compile otherwise.
 */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export type Expect<T extends true> = T;
