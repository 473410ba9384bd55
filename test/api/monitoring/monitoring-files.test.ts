import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';
import { useTestApp } from '../../harness';

/**
 * The monitoring that ships in `docs/monitoring/`: the Grafana dashboard and the Prometheus alert
 * rules. Every PromQL expression must parse (with Prometheus's own grammar) and every metric it
 * names must be one the service exposes on `/metrics`.
 */
const monitoring = path.join(__dirname, '..', '..', '..', '..', 'docs', 'monitoring');

interface Panel {
  title?: string;
  type: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

function dashboardExpressions(): { where: string; expr: string }[] {
  const dashboard = JSON.parse(readFileSync(path.join(monitoring, 'grafana-dashboard.json'), 'utf8')) as { panels: Panel[] };
  const walk = (panels: Panel[]): { where: string; expr: string }[] => panels.flatMap((panel) => [
    ...(panel.targets ?? []).map((target) => ({ where: `dashboard panel "${panel.title}"`, expr: target.expr })),
    ...walk(panel.panels ?? []),
  ]);
  return walk(dashboard.panels);
}

interface Rule {
  alert: string;
  expr: string;
  for: string;
  labels: { severity: string };
  annotations: { summary: string; description?: string };
}

function alertRules(): { groups: { name: string; rules: Rule[] }[] } {
  return parseYaml(readFileSync(path.join(monitoring, 'prometheus-alerts.yml'), 'utf8'));
}

/** Grafana's own variables stand where Prometheus expects a duration. */
function asPromql(expr: string): string {
  return expr.replace(/\$\{?__(rate_)?interval\}?/g, '5m');
}

/** The metric names an expression selects, or the spans the grammar could not parse. */
function inspect(expr: string): { metrics: string[]; errors: string[] } {
  const text = asPromql(expr);
  const metrics: string[] = [];
  const errors: string[] = [];
  parser.parse(text).iterate({
    enter(node) {
      if (node.type.isError) errors.push(`at ${node.from}: "${text.slice(Math.max(0, node.from - 10), node.to + 10)}"`);
      if (node.name === 'Identifier' && node.node.parent?.name === 'VectorSelector') metrics.push(text.slice(node.from, node.to));
    },
  });
  return { metrics, errors };
}

/** Every sample name `/metrics` can show: each TYPE, with a histogram's and a summary's series. */
function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    names.add(name);
    if (type === 'histogram') ['_bucket', '_sum', '_count'].forEach((suffix) => names.add(name + suffix));
    if (type === 'summary') ['_sum', '_count'].forEach((suffix) => names.add(name + suffix));
  }
  return names;
}

describe('monitoring files (docs/monitoring)', () => {
  const t = useTestApp();

  it('the alert rules are Prometheus rule groups: alert, expr, for, labels.severity, annotations.summary', () => {
    const { groups } = alertRules();
    expect(groups).to.be.an('array').that.is.not.empty;
    const names = new Set<string>();
    for (const group of groups) {
      expect(group.name, 'group name').to.be.a('string').that.is.not.empty;
      expect(group.rules, `rules of ${group.name}`).to.be.an('array').that.is.not.empty;
      for (const rule of group.rules) {
        expect(rule.alert, 'alert name').to.match(/^[A-Z][A-Za-z0-9]+$/);
        expect(names.has(rule.alert), `${rule.alert} defined twice`).to.equal(false);
        names.add(rule.alert);
        expect(rule.expr, `${rule.alert} expr`).to.be.a('string').that.is.not.empty;
        expect(rule.for, `${rule.alert} for`).to.match(/^\d+[smh]$/);
        expect(rule.labels?.severity, `${rule.alert} severity`).to.be.oneOf(['warning', 'critical']);
        expect(rule.annotations?.summary, `${rule.alert} summary`).to.be.a('string').that.is.not.empty;
        expect(Object.keys(rule).sort(), `${rule.alert} keys`).to.deep.equal(['alert', 'annotations', 'expr', 'for', 'labels']);
      }
    }
  });

  it('every expression parses as PromQL', () => {
    const expressions = [
      ...dashboardExpressions(),
      ...alertRules().groups.flatMap((group) => group.rules.map((rule) => ({ where: `alert ${rule.alert}`, expr: rule.expr }))),
    ];
    expect(expressions.length).to.be.above(20);
    for (const { where, expr } of expressions) expect(inspect(expr).errors, `${where}: ${expr}`).to.deep.equal([]);
  });

  it('every metric they name is exposed on /metrics, and they cover what operators watch', async () => {
    const { text } = await t.api.get('/metrics');
    const exposed = exposedNames(text);
    const used = new Map<string, string>();
    for (const { where, expr } of dashboardExpressions()) for (const metric of inspect(expr).metrics) used.set(metric, where);
    for (const group of alertRules().groups) {
      for (const rule of group.rules) for (const metric of inspect(rule.expr).metrics) used.set(metric, `alert ${rule.alert}`);
    }
    const missing = [...used].filter(([metric]) => !exposed.has(metric)).map(([metric, where]) => `${metric} (${where})`);
    expect(missing, 'named in docs/monitoring but not on /metrics').to.deep.equal([]);
    // Pool saturation, queue wait, failures by error code, refunds, payment outcomes, streams.
    for (const watched of [
      'provider_slots_leased', 'provider_slots', 'queue_oldest_job_age_seconds', 'queue_jobs_waiting', 'generations_finished_total',
      'credit_transactions_total', 'payment_status_changes_total', 'payments_oldest_open_age_seconds', 'sse_streams_open',
    ]) expect(used.has(watched), `${watched} is watched`).to.equal(true);
  });

  it('the metric check itself catches a name that is not exposed', () => {
    expect(inspect('sum(rate(no_such_metric_total[5m])) / max(up)').metrics).to.deep.equal(['no_such_metric_total', 'up']);
    expect(inspect('sum(rate(broken[5m])').errors).not.to.deep.equal([]);
  });
});
