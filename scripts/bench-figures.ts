/**
 * One figure of `npm run bench`, as a benchmark measured it: printed on one `FIGURE` line, which
 * `npm run bench` (`scripts/bench.ts`) gathers into the closing table.
 */
export interface BenchFigure {
  figure: string;
  /** What this run measured. */
  value: string;
  /** The baseline measured in the same run, or what the figure is compared with. */
  baseline: string;
  goal: string;
  met: boolean | null;
}

export const figurePrefix = 'FIGURE ';

export function reportFigure(figure: BenchFigure): void {
  console.log(figurePrefix + JSON.stringify(figure));
}
