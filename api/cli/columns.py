"""Values shown one way in tables and another in ``-f json``."""

from cliff import columns


class Progress(columns.FormattableColumn):
    """``tristate:progress`` ({step, percent} or null): "spawning 40%"."""

    def human_readable(self):
        if not self._value:
            return ''
        step = self._value.get('step') or ''
        return ('%s %d%%' % (step, self._value.get('percent') or 0)).strip()


class Counts(columns.FormattableColumn):
    """{name: count}: "running=2, ADMIN_down=1" (zeros left out)."""

    def human_readable(self):
        return ', '.join('%s=%d' % (k, v) for k, v in (self._value or {}).items()
                         if v)


class Usage(columns.FormattableColumn):
    """(used, total): "3/16"."""

    def human_readable(self):
        used, total = self._value
        return '%s/%s' % (used, total)

    def machine_readable(self):
        used, total = self._value
        return {'used': used, 'total': total}
