"""What a lease request means: Blazar-like bodies turned into values.

The API tier has already checked the shape (JSON schema, ``api/routes/
leases.py``); here the meaning is checked, with the clock: dates (``now``
allowed for the start, ISO 8601 or Blazar's ``YYYY-MM-DD HH:MM``, UTC),
their order, the reservations, ``on_end``. A bad value raises
:class:`~common.exception.Invalid` naming the field, like the API's own
400s; a change the lease's status forbids (a new start after the start)
raises :class:`~common.exception.LeaseActionNotAllowed` (409).
"""

import datetime
import re

from common import exception
from common import leases as rules
from common.db import lease_hosts

_DURATION = re.compile(r'^\s*(\d+)\s*([smhd])\s*$')
_UNITS = {'s': 1, 'm': 60, 'h': 3600, 'd': 86400}
_MAX_DURATION_DIGITS = 12


def bad(field, value, why):
    return exception.Invalid('Invalid input for field/attribute %s. '
                             'Value: %r. %s' % (field, value, why))


def parse_date(field, value, now):
    """Naive UTC from 'now', ISO 8601 or 'YYYY-MM-DD HH:MM'."""
    if isinstance(value, datetime.datetime):
        return value
    if value == 'now':
        return now
    try:
        parsed = datetime.datetime.fromisoformat(str(value).strip())
    except ValueError:
        raise bad(field, value, 'Expected "now", "YYYY-MM-DD HH:MM" or ISO '
                  '8601 (UTC unless it says otherwise)') from None
    if parsed.tzinfo is not None:
        try:
            parsed = parsed.astimezone(datetime.UTC).replace(tzinfo=None)
        except OverflowError:
            # 0001-01-01T00:00+14:00 is in year 0 in UTC, 9999-12-31T23:59
            # -14:00 in year 10000: neither exists for Python or the tables.
            raise bad(field, value, 'In UTC it is outside the years 1 to '
                      '9999') from None
    return parsed


def parse_duration(field, value):
    """Blazar's '30m', '2h', '1d' as a timedelta."""
    match = _DURATION.match(str(value))
    if not match:
        raise bad(field, value, 'Expected a number and a unit: s, m, h or d '
                  '(e.g. 2h)')
    if len(match[1]) > _MAX_DURATION_DIGITS:
        raise _too_long(field, value)
    try:
        return datetime.timedelta(seconds=int(match[1]) * _UNITS[match[2]])
    except OverflowError:
        raise _too_long(field, value) from None


def _too_long(field, value):
    return bad(field, value, 'It is longer than any lease can be (its end '
               'must be in the years 1 to 9999)')


def default_before_end(start, end, minutes):
    """``[leases] before_end`` minutes before the end, not before the
    start; None when it is 0."""
    if minutes <= 0:
        return None
    try:
        return max(start, end - datetime.timedelta(minutes=minutes))
    except OverflowError:
        # An end within ``minutes`` of year 1: the start is later anyway
        # (and the window is refused if the end is not after it).
        return start


def _check_window(start, end, before_end):
    if end <= start:
        raise bad('end_date', str(end), 'It must be after start_date (%s)'
                  % start)
    if before_end is not None and not start <= before_end <= end:
        raise bad('before_end_date', str(before_end), 'It must be between '
                  'start_date (%s) and end_date (%s)' % (start, end))


def _count(index, name, value):
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if number < 1:
        raise bad('reservations.%d.%s' % (index, name), value,
                  'Expected a whole number of hosts >= 1')
    return number


def parse_reservation(index, body):
    """One ``physical:host`` reservation: min and max hosts, properties."""
    kind = body.get('resource_type')
    if kind not in rules.RESOURCE_TYPES:
        raise bad('reservations.%d.resource_type' % index, kind,
                  'Expected one of %s' % ', '.join(rules.RESOURCE_TYPES))
    low = _count(index, 'min', body.get('min', 1))
    high = _count(index, 'max', body.get('max', low))
    if high < low:
        raise bad('reservations.%d.max' % index, body.get('max'),
                  'It must be >= min (%d)' % low)
    if body.get('resource_properties') not in (None, '', '[]'):
        raise bad('reservations.%d.resource_properties' % index,
                  body['resource_properties'], 'Selecting hosts by extra '
                  'capabilities is not supported by Tristate (use '
                  'hypervisor_properties)')
    props = body.get('hypervisor_properties') or ''
    lease_hosts.parse_properties(
        props, 'reservations.%d.hypervisor_properties' % index)
    return {'resource_type': kind, 'min_hosts': low, 'max_hosts': high,
            'hypervisor_properties': props}


def parse_create(body, *, now, before_end_minutes):
    """Keyword arguments of :meth:`common.db.leases.LeaseDB.create_lease`."""
    start = parse_date('start_date', body['start_date'], now)
    if start < now.replace(second=0, microsecond=0):
        raise bad('start_date', body['start_date'], 'It is in the past (now '
                  'is %s); use "now" to start at once' % now)
    end = parse_date('end_date', body['end_date'], now)
    if 'before_end_date' in body and body['before_end_date'] is not None:
        before_end = parse_date('before_end_date', body['before_end_date'],
                                now)
    else:
        before_end = default_before_end(start, end, before_end_minutes)
    _check_window(start, end, before_end)
    return {'name': body['name'], 'start': start, 'end': end,
            'before_end': before_end,
            'on_end': body.get('on_end') or rules.ON_END[0],
            'reservations': [parse_reservation(i, r) for i, r in
                             enumerate(body['reservations'])]}


def _event_status(lease, event_type):
    return next((e['status'] for e in lease['events']
                 if e['event_type'] == event_type), None)


def _deny(lease, field, why):
    return exception.LeaseActionNotAllowed(
        action='update', lease=lease['id'],
        reason='%s cannot change %s' % (field, why))


def _new_end(lease, body, now):
    if 'end_date' in body:
        end = parse_date('end_date', body['end_date'], now)
    else:
        end = lease['end_date']
    for field, sign in (('prolong_for', 1), ('reduce_by', -1)):
        if body.get(field):
            try:
                end += sign * parse_duration(field, body[field])
            except OverflowError:
                raise _too_long(field, body[field]) from None
    return end


def parse_update(lease, body, *, now, before_end_minutes):
    """``(values, recheck)`` for :meth:`~common.db.leases.LeaseDB.
    update_lease`, from the lease as it is while UPDATING."""
    values = {key: body[key] for key in ('name', 'on_end') if key in body}
    start, end = lease['start_date'], lease['end_date']
    if 'start_date' in body:
        if _event_status(lease, rules.START_LEASE) != rules.event.UNDONE:
            raise _deny(lease, 'start_date', 'once the lease has started')
        start = parse_date('start_date', body['start_date'], now)
        if start < now.replace(second=0, microsecond=0):
            raise bad('start_date', body['start_date'], 'It is in the past '
                      '(now is %s)' % now)
    if {'end_date', 'prolong_for', 'reduce_by'} & set(body):
        if _event_status(lease, rules.END_LEASE) != rules.event.UNDONE:
            raise _deny(lease, 'end_date', 'once the lease has ended')
        end = _new_end(lease, body, now)
        if end <= now:
            raise bad('end_date', str(end), 'It is in the past (now is %s)'
                      % now)
    recheck = (start, end) != (lease['start_date'], lease['end_date'])
    before_end = lease['before_end_date']
    if body.get('before_end_date') is not None:
        before_end = parse_date('before_end_date', body['before_end_date'],
                                now)
    elif recheck:
        before_end = default_before_end(start, end, before_end_minutes)
    _check_window(start, end, before_end)
    if recheck or before_end != lease['before_end_date']:
        values.update(start_date=start, end_date=end,
                      before_end_date=before_end)
    return values, recheck
