"""Registering an option group on a ConfigOpts without sharing state.

``ConfigOpts.register_group()`` keeps a *shallow* copy of the OptGroup it
is given, so two ConfigOpts registering one module-level OptGroup share its
options' overrides: an override set in one test leaks into the next. A
fresh OptGroup per ConfigOpts avoids that.
"""

from oslo_config import cfg


def register(conf, group, opts):
    conf.register_group(cfg.OptGroup(group.name, title=group.title,
                                     help=group.help))
    conf.register_opts(opts, group=group.name)
