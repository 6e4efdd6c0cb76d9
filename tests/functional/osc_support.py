"""openstackclient (``openstack``) in a subprocess against the embedded
API, as a user runs it: a home directory with its ``clouds.yaml`` (one
cloud per token, from a template), and each command run with only that
configuration (none of the test runner's ``OS_*`` variables)."""

import json
import os
import pathlib
import subprocess
import sys

OPENSTACK = str(pathlib.Path(sys.executable).with_name('openstack'))
COMMAND_TIMEOUT = 120


def write_clouds(home, template, url, tokens):
    """``home``/clouds.yaml with the cloud ``template`` (``{name}``,
    ``{url}``, ``{token}``) once per {cloud name: token}; ``home``."""
    (home / 'clouds.yaml').write_text('clouds:\n' + ''.join(
        template.format(name=name, url=url, token=token)
        for name, token in tokens.items()))
    return home


def run(home, args, cloud, timeout=COMMAND_TIMEOUT):
    """``openstack --os-cloud CLOUD ARGS`` from ``home``: the finished
    process (output as text)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith('OS_')}
    env.update(OS_CLIENT_CONFIG_FILE=str(home / 'clouds.yaml'),
               HOME=str(home))
    return subprocess.run([OPENSTACK, '--os-cloud', cloud, *args],
                          check=False, env=env, cwd=home,
                          capture_output=True, text=True, timeout=timeout)


def parsed(output):
    """The JSON document of a command's output: ``--wait`` writes
    ``Progress: N`` and ``Complete`` lines before it."""
    lines = output.splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if line[:1] in '{[')
    return json.loads(''.join(lines[start:]))
