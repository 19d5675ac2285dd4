"""``python -m benchmarks [--only ledger,...] [--quick] [--out DIR]``:
run the benchmarks, print their tables, write results.json and
results.png."""

import argparse
import importlib
import os
import sys

from benchmarks import report

#: The benchmark modules, ``benchmarks.<name>``, in the order they run.
BENCHMARKS = ('ledger', 'rpc', 'tree', 'rest', 'leases')
BACKENDS = ('sqlite', 'postgresql', 'mysql')
DEFAULT_OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                           'results')


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
        description='Measure cyquota. Results go to '
                    'OUT/results.json and OUT/results.png.')
    parser.add_argument('--only', type=_choices(BENCHMARKS),
                        default=list(BENCHMARKS),
                        help='benchmarks to run, comma-separated (default: '
                             'all of %s)' % ','.join(BENCHMARKS))
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


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    progress = report.Progress()
    results, panels, tables, failed = {}, [], [], False
    for name in args.only:
        module = importlib.import_module('benchmarks.' + name)
        progress.step('%s: starting' % name)
        rows = module.run(args, progress)
        results[name] = {'title': module.TITLE,
                         'columns': [key for key, _, _ in module.COLUMNS],
                         'rows': rows}
        panels.append((module.TITLE,
                       lambda ax, module=module, rows=rows:
                       module.plot(rows, ax)))
        summary = getattr(module, 'summary', lambda rows: [])(rows)
        tables.append('\n'.join(
            [report.format_table(module.TITLE, module.COLUMNS, rows)]
            + summary))
        failed = failed or any(row.get('failed') for row in rows)
    json_path = os.path.join(args.out, 'results.json')
    png_path = os.path.join(args.out, 'results.png')
    report.write_json(json_path, {'only': args.only,
                                  'backends': args.backends,
                                  'quick': args.quick}, results)
    report.write_plot(png_path, panels)
    progress.step('wrote %s and %s' % (json_path, png_path))
    print('\n\n'.join(tables))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
