"""What every benchmark shares: progress on stderr, the results table,
``results.json`` and the PNG plot."""

import datetime
import json
import os
import platform
import sys
import time


class Progress:
    """Announces each step of a run on stderr, with the time since start."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.started = time.monotonic()

    def step(self, text):
        self.stream.write('[%6.1fs] %s\n' % (time.monotonic() - self.started,
                                             text))
        self.stream.flush()


def _cell(value, fmt):
    if value is None:
        return '-'
    return fmt.format(value)


def format_table(title, columns, rows):
    """A plain-text table: ``columns`` is ``[(key, heading, format), ...]``
    and each row a dict; a missing value shows as ``-``."""
    cells = [[_cell(row.get(key), fmt) for key, _, fmt in columns]
             for row in rows]
    headings = [heading for _, heading, _ in columns]
    widths = [max([len(h)] + [len(r[i]) for r in cells])
              for i, h in enumerate(headings)]

    def line(values):
        return '  '.join(v.rjust(w) for v, w in zip(values, widths)).rstrip()

    rule = '  '.join('-' * w for w in widths)
    return '\n'.join([title, rule, line(headings), rule]
                     + [line(r) for r in cells] + [rule])


def write_json(path, options, results):
    """Write ``results`` ({benchmark name: {title, columns, rows}}) with the
    run's options and a description of the machine."""
    document = {
        'created': datetime.datetime.now(datetime.timezone.utc).isoformat(),
        'machine': {'cpus': os.cpu_count(),
                    'python': platform.python_version(),
                    'platform': platform.platform()},
        'options': options,
        'benchmarks': results,
    }
    with open(path, 'w') as stream:
        json.dump(document, stream, indent=2, default=str)
        stream.write('\n')


def write_plot(path, panels):
    """One PNG with a panel per benchmark: ``panels`` is a list of
    ``(title, draw)`` where ``draw(ax)`` fills a matplotlib Axes."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(len(panels), 1, squeeze=False,
                                   figsize=(9, 4.5 * len(panels)))
    for ax, (title, draw) in zip(axes[:, 0], panels):
        ax.set_title(title)
        draw(ax)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def percentile_ms(latencies, fraction):
    """The ``fraction`` percentile of sorted ``latencies`` (seconds), in
    milliseconds."""
    index = min(len(latencies) - 1,
                int(round(fraction * (len(latencies) - 1))))
    return latencies[index] * 1000


def latency_bars(ax, rows, label, ylabel):
    """Side-by-side p50 and p99 bars of the rows that have them;
    ``label(row)`` names a row's pair of bars."""
    rows = [row for row in rows if 'p50' in row]
    x = range(len(rows))
    width = 0.38
    ax.bar([i - width / 2 for i in x], [r['p50'] for r in rows], width,
           label='p50')
    ax.bar([i + width / 2 for i in x], [r['p99'] for r in rows], width,
           label='p99')
    ax.set_xticks(list(x), [label(r) for r in rows], fontsize=7)
    ax.set_ylabel(ylabel)
    ax.legend()
