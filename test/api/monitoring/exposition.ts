/** Reading Prometheus text in tests. */

/** The value of one series of the exposition, or null when absent. */
export function sample(text: string, name: string, labels: Record<string, string> = {}): number | null {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const wanted = Object.entries(labels).every(([key, value]) => line.includes(`${key}="${value}"`));
    if (wanted) return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return null;
}
