"""The benchmarks' report (``python -m benchmarks``): a run of some
benchmarks into the default output directory keeps the sections and rows
of the others from the report already there, each dated by the run that
measured it; a run elsewhere writes only what it measured."""

import json
import sys
import types

import pytest

from benchmarks import __main__ as bench_main

EARLIER = '2020-01-02T03:04:05+00:00'


def _benchmark(name, value):
    """A benchmark module ``benchmarks.<name>`` whose one row holds
    ``value``."""
    module = types.ModuleType('benchmarks.' + name)
    module.TITLE = 'Benchmark %s' % name
    module.COLUMNS = [('backend', 'backend', '{}'),
                      ('value', 'value of %s' % name, '{:.1f}')]
    module.run = lambda args, progress: [dict(backend='sqlite',
                                              value=value)]
    module.plot = lambda rows, ax: ax.bar([0], [rows[0]['value']])
    module.summary = lambda rows: ['%s: %.1f' % (name, rows[0]['value'])]
    return module


@pytest.fixture
def out(tmp_path, monkeypatch):
    """The default output directory, and three benchmarks (alpha, beta,
    gamma) whose rows hold 1.0, 2.0 and 3.0."""
    default = tmp_path / 'doc'
    monkeypatch.setattr(bench_main, 'DEFAULT_OUT', str(default))
    monkeypatch.setattr(bench_main, 'BENCHMARKS', ('alpha', 'beta',
                                                   'gamma'))
    for value, name in enumerate(('alpha', 'beta', 'gamma'), 1):
        monkeypatch.setitem(sys.modules, 'benchmarks.' + name,
                            _benchmark(name, float(value)))
    return default


def _run(argv):
    assert bench_main.main(argv) == 0


def _results(directory):
    return json.loads((directory / 'results.json').read_text())


def _backdate(directory):
    """Make the report in ``directory`` look written on :data:`EARLIER`."""
    document = _results(directory)
    document['created'] = EARLIER
    for entry in document['benchmarks'].values():
        entry['created'] = EARLIER
    (directory / 'results.json').write_text(json.dumps(document))


def _values(document):
    return {name: [row['value'] for row in entry['rows']]
            for name, entry in document['benchmarks'].items()}


def test_a_partial_run_into_the_default_out_keeps_the_other_sections(
        out, capsys, monkeypatch):
    _run([])
    _backdate(out)
    capsys.readouterr()
    monkeypatch.setitem(sys.modules, 'benchmarks.beta',
                        _benchmark('beta', 20.0))
    _run(['--only', 'beta'])
    document = _results(out)
    # beta measured again; alpha and gamma kept, in the registry's order.
    assert _values(document) == {'alpha': [1.0], 'beta': [20.0],
                                 'gamma': [3.0]}
    assert document['benchmarks']['alpha']['created'] == EARLIER
    assert document['benchmarks']['beta']['created'] == document['created']
    assert document['created'] != EARLIER
    report = (out / 'report.md').read_text()
    assert [line for line in report.splitlines()
            if line.startswith('## ')] == [
        '## Machine', '## Benchmark alpha', '## Benchmark beta',
        '## Benchmark gamma']
    alpha, beta = _section(report, 'alpha'), _section(report, 'beta')
    assert 'From the run of %s' % EARLIER in alpha
    assert 'value of alpha' in alpha and '* alpha: 1.0' in alpha
    assert 'From the run of' not in beta and '* beta: 20.0' in beta
    # Only what this run measured is printed.
    printed = capsys.readouterr().out
    assert 'Benchmark beta' in printed and 'Benchmark alpha' not in printed


def _section(report, name):
    return report.split('## Benchmark %s\n' % name)[1].split('\n## ')[0]


def test_a_kept_section_keeps_the_date_of_the_run_that_measured_it(out):
    _run([])
    _backdate(out)
    _run(['--only', 'beta'])
    _run(['--only', 'gamma'])
    document = _results(out)
    assert document['benchmarks']['alpha']['created'] == EARLIER
    assert document['benchmarks']['beta']['created'] != EARLIER
    alpha = _section((out / 'report.md').read_text(), 'alpha')
    assert alpha.count('From the run of') == 1
    assert 'From the run of %s' % EARLIER in alpha


def test_a_kept_section_is_kept_as_written(out, monkeypatch):
    # The benchmark's code has changed since: its summary would fail on
    # the rows of the earlier run. The section is kept as written.
    _run([])
    before = _section((out / 'report.md').read_text(), 'alpha')

    def summary(rows):
        return ['%s' % rows[0]['new key']]
    monkeypatch.setattr(sys.modules['benchmarks.alpha'], 'summary', summary)
    _run(['--only', 'gamma'])
    after = _section((out / 'report.md').read_text(), 'alpha')
    assert after.split('\n', 2)[2] == before
    assert '* alpha: 1.0' in after


def test_a_run_elsewhere_writes_only_what_it_measured(out, tmp_path):
    _run([])
    elsewhere = tmp_path / 'elsewhere'
    _run(['--only', 'beta', '--out', str(elsewhere)])
    assert _values(_results(elsewhere)) == {'beta': [2.0]}
    assert 'From the run of' not in (elsewhere / 'report.md').read_text()


def test_a_first_partial_run_has_nothing_to_keep(out):
    _run(['--only', 'gamma'])
    assert _values(_results(out)) == {'gamma': [3.0]}
