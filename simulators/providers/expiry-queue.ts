/** Removes and answers the entries of `queue`, kept in expiry order, whose `expiresAt` has passed. */
export function takeExpired<T extends { expiresAt: number }>(queue: T[], now: number): T[] {
  let count = 0;
  while (count < queue.length && queue[count].expiresAt <= now) count += 1;
  return queue.splice(0, count);
}
