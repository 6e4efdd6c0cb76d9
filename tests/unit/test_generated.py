"""Generated files are committed fresh, and every option documents its default."""

import pathlib

import pytest
from oslo_config import generator

from common import docs
from common.conf import image as image_conf
from common.conf import opts

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_states_page_is_fresh():
    committed = (ROOT / 'docs' / 'states.md').read_text()
    assert committed == docs.render_states_md(), (
        'docs/states.md is stale: run `tox -e docs` and commit the result')


def test_sample_config_is_fresh(tmp_path):
    out = tmp_path / 'tristate.conf.sample'
    generator.main(args=[
        '--config-file',
        str(ROOT / 'etc' / 'tristate' / 'tristate-config-generator.conf'),
        '--output-file', str(out)])
    committed = (ROOT / 'etc' / 'tristate' / 'tristate.conf.sample').read_text()
    assert committed == out.read_text(), (
        'etc/tristate/tristate.conf.sample is stale: run `tox -e genconfig` '
        'and commit the result')


def _all_opts():
    # keystoneauth's options in [image] are theirs: their help follows
    # keystoneauth's conventions.
    theirs = {('image', opt.dest) for opt in image_conf.keystone_opts()}
    return [pytest.param(opt, id='%s.%s' % (group, opt.dest))
            for group, group_opts in opts.list_opts() for opt in group_opts
            if (getattr(group, 'name', group), opt.dest) not in theirs]


@pytest.mark.parametrize('opt', _all_opts())
def test_option_help_states_its_default(opt):
    assert opt.help, 'option %s has no help' % opt.dest
    assert 'default' in opt.help.lower(), (
        'the help of option %s does not say its default (house rule: every '
        "option's help says its unit, range and default)" % opt.dest)
