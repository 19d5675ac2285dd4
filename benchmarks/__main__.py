"""``python -m benchmarks [--only ledger,...] [--quick] [--out DIR]``:
run the benchmarks, print their tables and write the run's report:
``report.md`` with a PNG per benchmark, and ``results.json``."""

import argparse
import datetime
import importlib
import os
import sys

from benchmarks import report

#: The benchmark modules, ``benchmarks.<name>``, in the order they run.
BENCHMARKS = ('ledger', 'floors', 'rpc', 'tree', 'rest', 'leases',
              'budgets', 'load', 'placement', 'hostile', 'openstack')
#: Measured only when named in ``--only``: the OpenStack bed takes ten
#: minutes and 2 GB.
NAMED_ONLY = ('openstack',)
BACKENDS = ('sqlite', 'postgresql', 'mysql')
DEFAULT_OUT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'doc',
    'benchmarks')


def _choices(known):
    def parse(text):
        names = [name.strip() for name in text.split(',') if name.strip()]
        unknown = sorted(set(names) - set(known))
        if not names or unknown:
            raise argparse.ArgumentTypeError(
                'expected a comma-separated list of %s, got %r'
                % (', '.join(known), text))
        return names
    return parse


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m benchmarks',
        description='Measure cyquota. The report goes to OUT/report.md '
                    '(with OUT/<benchmark>.png) and OUT/results.json.')
    parser.add_argument('--only', type=_choices(BENCHMARKS),
                        default=[name for name in BENCHMARKS
                                 if name not in NAMED_ONLY],
                        help='benchmarks to run, comma-separated, of %s '
                             '(default: all but openstack)'
                             % ','.join(BENCHMARKS))
    parser.add_argument('--backends', type=_choices(BACKENDS),
                        default=list(BACKENDS),
                        help='databases to measure, comma-separated '
                             '(default: %s)' % ','.join(BACKENDS))
    parser.add_argument('--quick', action='store_true',
                        help='much shorter runs: a smoke test, not a '
                             'measurement')
    parser.add_argument('--out', default=DEFAULT_OUT,
                        help='output directory (default: %(default)s)')
    return parser.parse_args(argv)


def _keeps_earlier(args):
    """Whether the run keeps the sections of the benchmarks it does not
    run from the report in ``OUT``: a partial run into the default
    ``OUT``, where the report of the last full run is kept."""
    return (set(args.only) != set(BENCHMARKS) and os.path.abspath(args.out)
            == os.path.abspath(DEFAULT_OUT))


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    created = datetime.datetime.now(datetime.timezone.utc).isoformat(
        timespec='seconds')
    document = {
        'created': created,
        'machine': report.describe_machine(),
        'options': {'only': args.only, 'backends': args.backends,
                    'quick': args.quick,
                    'argv': sys.argv[1:] if argv is None else list(argv)},
        'benchmarks': {}}
    progress = report.Progress()
    sections, tables, failed = {}, [], False
    for name in args.only:
        module = importlib.import_module('benchmarks.' + name)
        progress.step('%s: starting' % name)
        rows = module.run(args, progress)
        document['benchmarks'][name] = {
            'title': module.TITLE, 'created': created,
            'columns': [key for key, _, _ in module.COLUMNS], 'rows': rows}
        figure = name + '.png'
        report.write_figure(os.path.join(args.out, figure), module.TITLE,
                            lambda ax, module=module, rows=rows:
                            module.plot(rows, ax))
        table = report.format_table(module.TITLE, module.COLUMNS, rows)
        summary = getattr(module, 'summary', lambda rows: [])(rows)
        sections[name] = report.section(module.TITLE, figure, table, summary)
        tables.append('\n'.join([table] + summary))
        failed = failed or any(row.get('failed') for row in rows)
    document['machine_after'] = report.describe_machine()
    json_path = os.path.join(args.out, 'results.json')
    markdown_path = os.path.join(args.out, 'report.md')
    kept = {}
    if _keeps_earlier(args):
        kept = report.keep_earlier(document, report.read_json(json_path),
                                   report.read_sections(markdown_path),
                                   BENCHMARKS)
    report.write_json(json_path, document)
    report.write_markdown(markdown_path, document, [
        (entry['title'], sections.get(name) or kept[name],
         entry['created'] if name in kept else None)
        for name, entry in document['benchmarks'].items()])
    progress.step('wrote %s, %s and a PNG per benchmark%s' % (
        markdown_path, json_path, ' (kept from earlier runs: %s)'
        % ', '.join(kept) if kept else ''))
    print('\n\n'.join(tables))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
