/** A bench's `--name` option as a whole number of at least `min`; anything else stops the bench before it starts. */
export function wholeOption(values: Record<string, unknown>, name: string, min: number): number {
  const value = Number(values[name]);
  if (!Number.isSafeInteger(value) || value < min) throw new Error(`--${name} takes a whole number of at least ${min}, not ${String(values[name])}`);
  return value;
}
