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

# A cloud of clouds.yaml for :func:`write_clouds`: the embedded API with a
# token (``user:project``, or the admin's), its compute and image APIs
# named directly (no Keystone catalog).
CLOUD = """\
  {name}:
    auth_type: admin_token
    auth:
      endpoint: {url}/v2.1
      token: "{token}"
    region_name: RegionOne
    compute_endpoint_override: {url}/v2.1
    image_endpoint_override: {url}/image
"""


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


def osc(home, *args, cloud='tristate', parse=True):
    """``openstack --os-cloud CLOUD ARGS -f json`` that must succeed: its
    output, parsed (``parse=False``: as text)."""
    done = run(home, [*args, '-f', 'json'] if parse else args, cloud)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return parsed(done.stdout) if parse else done.stdout


def fails(home, *args, cloud='tristate'):
    """The error output of a command that must fail."""
    done = run(home, args, cloud)
    assert done.returncode != 0, (args, done.stdout)
    return done.stderr
