"""What every benchmark shares: progress on stderr, the results table,
and the run's report: ``results.json``, a PNG per benchmark and
``report.md``."""

import json
import os
import platform
import re
import sys
import time
import timeit

#: The line under the heading of a section an earlier run measured.
_EARLIER_RUN_LINE = '*From the run of %s: this run did not measure it.*'
_EARLIER_RUN = re.compile(r'\A\s*\*From the run of [^\n]*\*\n')


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


def _cpu_model():
    try:
        with open('/proc/cpuinfo') as stream:
            for line in stream:
                if line.startswith('model name'):
                    return line.split(':', 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib():
    try:
        return round(os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES')
                     / 2 ** 30, 1)
    except (ValueError, OSError):
        return None


def describe_machine():
    """What the numbers were measured on: CPU, memory, load, software, and
    how fast the CPU runs Python at that moment (``_python_speed``)."""
    return {'cpu': _cpu_model(), 'cpus': os.cpu_count(),
            'memory_gib': _memory_gib(),
            'load_average': [round(x, 2) for x in os.getloadavg()],
            'python_speed_us': _python_speed(),
            'python': platform.python_version(),
            'platform': platform.platform()}


def _python_speed():
    """Microseconds of a fixed pure-Python loop, best of five. A shared
    machine's speed varies from day to day, and the layers above the
    driver (Python) slow down more than the servers' round trips: this
    tells two reports' machines apart."""
    loop = 'd = {}\nfor i in range(1000):\n    d[i % 7] = d.get(i % 7, 0) + i'
    return round(min(timeit.repeat(loop, number=20, repeat=5)) / 20 * 1e6)


def write_json(path, document):
    """Write the run's ``document`` (options, machine, results)."""
    with open(path, 'w') as stream:
        json.dump(document, stream, indent=2, default=str)
        stream.write('\n')


def read_json(path):
    """The document an earlier run wrote to ``path``; None when there is
    none (or it does not parse)."""
    try:
        with open(path) as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def read_sections(path):
    """``{title: text}`` of the benchmark sections of the report an earlier
    run wrote to ``path`` (empty when there is none), as they were written
    (figure, table, summary), without the date of an earlier run."""
    try:
        with open(path) as stream:
            text = stream.read()
    except OSError:
        return {}
    found = {}
    for part in text.split('\n## ')[1:]:
        title, _, body = part.partition('\n')
        found[title] = _EARLIER_RUN.sub('', body).strip('\n')
    found.pop('Machine', None)
    return found


def keep_earlier(document, earlier, sections, order):
    """Add to ``document`` the benchmarks of the ``earlier`` document that
    it lacks and that the earlier report has a section of (``sections``,
    by title), each with the date of the run that measured it (its own
    ``created``, else the earlier document's), all in ``order`` (the
    benchmark names). A section is kept as it was written, not drawn
    again from its rows, which the benchmark's code of today may read
    otherwise. Returns ``{name: section text}`` of those kept."""
    found = (earlier or {}).get('benchmarks', {})
    kept = {}
    for name in order:
        entry = found.get(name)
        if (name not in document['benchmarks'] and entry is not None
                and entry.get('title') in sections):
            entry.setdefault('created', earlier['created'])
            kept[name] = sections[entry['title']]
    merged = dict(document['benchmarks'], **{name: found[name]
                                             for name in kept})
    document['benchmarks'] = {name: merged[name] for name in order
                              if name in merged}
    return kept


def write_figure(path, title, draw):
    """One benchmark's PNG: ``draw(ax)`` fills a matplotlib Axes."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    figure, ax = pyplot.subplots(figsize=(9, 4.5))
    ax.set_title(title, fontsize=9)
    draw(ax)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def section(title, figure, table, summary):
    """A benchmark's section of the report, below its heading: its figure
    (a file name), its table and its summary lines."""
    lines = ['![%s](%s)' % (title, figure), '', '```', table, '```', '']
    lines += ['* %s' % line for line in summary]
    return '\n'.join(lines).strip('\n')


def write_markdown(path, document, sections):
    """The run's report: date, options and machine, then each benchmark's
    section. ``sections`` is ``[(title, text, kept), ...]``: the text of
    :func:`section`, and the date of the earlier run it comes from (None
    for this run's)."""
    machine = document['machine']
    options = document['options']
    lines = ['# cyquota benchmarks', '',
             'Written by `python -m benchmarks` on %s.' % document['created'],
             '']
    if options['quick']:
        lines += ['**A `--quick` run: a smoke test of the benchmarks, not a '
                  'measurement. Do not read these numbers.**', '']
    lines += [
        'Each figure stands beside its reference measured in the same run '
        '(the ratio columns); on a shared machine absolute numbers drift, '
        'ratios from one run hold. `benchmarks/README.rst` says what each '
        'benchmark measures.', '',
        '## Machine', '',
        '* CPU: %s, %s cores' % (machine['cpu'], machine['cpus']),
        '* memory: %s GiB' % machine['memory_gib'],
        '* load average (1, 5, 15 min) at the start: %s; at the end: %s' % (
            ', '.join(map(str, machine['load_average'])),
            ', '.join(map(str, document['machine_after']['load_average']))),
        '* a fixed pure-Python loop (`report._python_speed`, lower is '
        'faster): %s µs at the start, %s µs at the end' % (
            machine['python_speed_us'],
            document['machine_after']['python_speed_us']),
        '* Python %s on %s' % (machine['python'], machine['platform']),
        '* options: `%s`' % ' '.join(options['argv']) if options['argv']
        else '* options: none (every benchmark, every database)', '']
    earlier = [title for title, _, kept in sections if kept]
    if earlier:
        lines += [
            'This run measured only some benchmarks; %d section(s) come '
            'from earlier runs, each dated under its title (the machine '
            'above is this run\'s). Every ratio is within one run of one '
            'benchmark, so each section holds on its own.' % len(earlier),
            '']
    for title, text, kept in sections:
        lines += ['## %s' % title, '']
        if kept:
            lines += [_EARLIER_RUN_LINE % kept, '']
        lines += [text, '']
    with open(path, 'w') as stream:
        stream.write('\n'.join(lines))


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


def side_axes(ax, size, pad=0.9, widen=True):
    """New axes to the right of ``ax``, ``size`` of its width (a
    percentage, ``'45%'``); ``widen``: the figure made 14 inches wide to
    hold both."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable
    if widen:
        ax.figure.set_size_inches(14, 5)
    return make_axes_locatable(ax).append_axes('right', size=size, pad=pad)


def sizes_axis(ax, sizes, xlabel, ylabel):
    """Dress ``ax`` as a curve against ``sizes`` (a log scale labelled
    with the sizes themselves), from zero up."""
    sizes = sorted(set(sizes))
    ax.set_xscale('log')
    ax.set_xticks(sizes, [format(size, ',') for size in sizes])
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=6)
