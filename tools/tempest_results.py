"""Reads a subunit v2 stream of a Tempest run (``stestr last --subunit``)
and prints, as JSON, every test's result: ``{test id: {"status":
"passed"|"failed"|"skipped", "reason": the skip reason, "cause": one line
that says why it failed}}``.

Run by the Tempest virtualenv's Python (``tools/tempest.py`` does): it
needs ``python-subunit`` and ``testtools``, which Tempest depends on, and
nothing of Tristate (:func:`cause` needs neither). A class whose
``setUpClass`` failed is one entry ``setUpClass (CLASS)``, failed: its
tests did not run.
"""

import json
import re
import sys

STATUS = {'success': 'passed', 'xfail': 'passed', 'skip': 'skipped',
          'fail': 'failed', 'uxsuccess': 'failed'}
# The line of a traceback that names the exception and its message.
_EXCEPTION = re.compile(r'^([A-Za-z_][\w.]*(?:Error|Exception|Failure|'
                        r'Exceeded|Timeout|NotFound|BadRequest|Conflict|'
                        r'Forbidden|Unauthorized|ServerFault|Body|Code)'
                        r'\w*): (.*)$')
_VOLATILE = [
    (re.compile(r'[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-'
                r'[0-9a-f]{12}'), '<uuid>'),
    (re.compile(r'\b[0-9a-f]{32}\b'), '<id>'),
    (re.compile(r'127\.0\.0\.1:\d+'), '127.0.0.1:PORT'),
]
CAUSE_LENGTH = 220


def _text(details, name):
    content = details.get(name)
    if content is None:
        return ''
    return b''.join(bytes(part) for part in content.iter_bytes()).decode(
        'utf-8', 'replace')


def cause(traceback):
    """The last ``Exception: message`` line of ``traceback`` with its
    Details line, ids and numbers blanked, so that failures of one cause
    read the same."""
    lines = traceback.splitlines()
    found = None
    for index, line in enumerate(lines):
        match = _EXCEPTION.match(line.strip())
        if match:
            found = index
    if found is None:
        tail = [line for line in lines if line.strip()]
        text = tail[-1].strip() if tail else '(no traceback)'
    else:
        text = lines[found].strip()
        following = lines[found + 1:found + 2]
        if following and following[0].startswith('Details:'):
            text += ' ' + following[0].strip()
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text[:CAUSE_LENGTH]


def read(stream):
    import subunit      # Tempest's virtualenv has them, Tristate's need not
    import testtools

    results = {}

    def on_test(test):
        status = STATUS.get(test['status'])
        if status is None:      # 'exists', 'inprogress': not a result
            return
        details = test['details']
        entry = {'status': status}
        if status == 'skipped':
            entry['reason'] = _text(details, 'reason').strip()
        elif status == 'failed':
            entry['cause'] = cause(_text(details, 'traceback'))
        results[test['id']] = entry

    case = subunit.ByteStreamToStreamResult(stream,
                                            non_subunit_name='stdout')
    result = testtools.StreamToDict(on_test)
    result.startTestRun()
    try:
        case.run(result)
    finally:
        result.stopTestRun()
    return results


def main(argv):
    with open(argv[1], 'rb') as stream:
        json.dump(read(stream), sys.stdout, indent=1, sort_keys=True)


if __name__ == '__main__':
    main(sys.argv)
