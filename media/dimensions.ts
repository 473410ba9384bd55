export interface Size {
  width: number;
  height: number;
}

/**
 * Size with the short side at `shortSide`, or the original size when it is already smaller (never upscaled),
 * proportions kept, both sides rounded down to even numbers because H.264 in yuv420p needs them.
 */
export function evenSizeForShortSide({ width, height }: Size, shortSide: number): Size {
  const scale = Math.min(1, shortSide / Math.min(width, height));
  const even = (side: number) => Math.max(2, Math.floor(Math.round(side * scale) / 2) * 2);
  return { width: even(width), height: even(height) };
}
