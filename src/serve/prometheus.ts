/**
 * The Prometheus text exposition format (version 0.0.4), as much of it as `/metrics` needs:
 * counters, gauges, summaries (quantiles of recent samples with the totals) and cumulative
 * histograms, each with its `# HELP` and `# TYPE` lines, label values escaped.
 */
import type { Bucket, Quantiles } from './metrics.js';

/** The content type of the format. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** Labels of one sample. */
export type Labels = Readonly<Record<string, string>>;

function escapeLabel(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function escapeHelp(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function labelText(labels: Labels | undefined): string {
  if (labels === undefined) return '';
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabel(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function num(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

/** Builds one exposition, family by family. */
export class PrometheusText {
  readonly #lines: string[] = [];

  #family(name: string, type: string, help: string): void {
    this.#lines.push(`# HELP ${name} ${escapeHelp(help)}`, `# TYPE ${name} ${type}`);
  }

  #sample(name: string, value: number, labels?: Labels): void {
    this.#lines.push(`${name}${labelText(labels)} ${num(value)}`);
  }

  /** A counter family (`name` should end in `_total`): one sample per entry of `values`. */
  counter(name: string, help: string, values: number | readonly (readonly [Labels, number])[]): this {
    this.#family(name, 'counter', help);
    if (typeof values === 'number') this.#sample(name, values);
    else for (const [labels, v] of values) this.#sample(name, v, labels);
    return this;
  }

  /** A gauge family: one sample per entry of `values`. */
  gauge(name: string, help: string, values: number | readonly (readonly [Labels, number])[]): this {
    this.#family(name, 'gauge', help);
    if (typeof values === 'number') this.#sample(name, values);
    else for (const [labels, v] of values) this.#sample(name, v, labels);
    return this;
  }

  /** A summary: the 0.5 and 0.99 quantiles of the recent samples, `_sum` and `_count` since the start. */
  summary(name: string, help: string, q: Quantiles): this {
    this.#family(name, 'summary', help);
    this.#sample(name, q.p50, { quantile: '0.5' });
    this.#sample(name, q.p99, { quantile: '0.99' });
    this.#sample(`${name}_sum`, q.sum);
    this.#sample(`${name}_count`, q.count);
    return this;
  }

  /** A histogram of cumulative `buckets`, with the `+Inf` bucket, `_sum` and `_count`. */
  histogram(name: string, help: string, buckets: readonly Bucket[], sum: number, count: number): this {
    this.#family(name, 'histogram', help);
    for (const b of buckets) this.#sample(`${name}_bucket`, b.count, { le: num(b.le) });
    this.#sample(`${name}_bucket`, count, { le: '+Inf' });
    this.#sample(`${name}_sum`, sum);
    this.#sample(`${name}_count`, count);
    return this;
  }

  /** The exposition (ends with a newline). */
  toString(): string {
    return this.#lines.join('\n') + '\n';
  }
}
