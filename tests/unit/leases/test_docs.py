"""docs/leases.md is rendered from common/leases.py, committed fresh, and
``tristate-manage docs leases`` writes it."""

import pathlib

from oslo_config import cfg

from common import conf as tconf
from common import docs
from common import leases as rules
from common.cmd import manage

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_leases_page_is_fresh():
    committed = (ROOT / 'docs' / 'leases.md').read_text()
    assert committed == docs.render_leases_md(), (
        'docs/leases.md is stale: run `tox -e docs` and commit the result')


def test_the_page_shows_every_transition_and_combination():
    page = docs.render_leases_md()
    for machine in (rules.LEASES, rules.RESERVATIONS, rules.EVENTS):
        for row in machine.rows:
            assert '| %s | %s | %s |' % (row.source, row.target,
                                         row.why) in page
    assert ('| TERMINATING | active, deleted, error | DONE | IN_PROGRESS |'
            in page)
    assert '| UPDATING | any | UNDONE, DONE, ERROR | UNDONE, DONE, ERROR |' \
        in page
    assert '| DELETING | any | any | any |' in page


def test_manage_writes_the_leases_page(tmp_path):
    conf = cfg.ConfigOpts()
    tconf.register_all(conf)
    out = tmp_path / 'leases.md'
    (tmp_path / 'empty.conf').write_text('')
    manage.main(['--config-file', str(tmp_path / 'empty.conf'), 'docs',
                 'leases', '--output', str(out)], conf=conf)
    assert out.read_text() == docs.render_leases_md()
