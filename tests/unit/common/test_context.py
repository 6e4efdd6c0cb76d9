"""The RequestContext carries the task_id across the bus (DESIGN.md section 3)."""

import json

from common import context


def _ctx():
    return context.RequestContext(user_id='alice', project_id='demo',
                                  roles=['member', 'reader'], is_admin=False,
                                  request_id='req-1234', task_id='task-1')


def _same(a, b):
    for field in ('task_id', 'user_id', 'project_id', 'roles', 'request_id',
                  'is_admin'):
        assert getattr(a, field) == getattr(b, field), field


def test_round_trip_keeps_every_field():
    ctx = _ctx()
    back = context.RequestContext.from_dict(ctx.to_dict())
    assert isinstance(back, context.RequestContext)
    _same(ctx, back)


def test_json_round_trip():
    ctx = _ctx()
    back = context.RequestContext.from_dict(json.loads(json.dumps(ctx.to_dict())))
    _same(ctx, back)


def test_for_task_copies_and_leaves_the_original_alone():
    ctx = _ctx()
    task_ctx = ctx.for_task('task-2')
    assert task_ctx.task_id == 'task-2'
    assert ctx.task_id == 'task-1'
    assert (task_ctx.user_id, task_ctx.request_id) == ('alice', 'req-1234')


def test_idle_context_has_no_task():
    ctx = context.RequestContext(user_id='alice', project_id='demo')
    assert ctx.task_id is None
    assert context.RequestContext.from_dict(ctx.to_dict()).task_id is None


def test_admin_context_and_elevated():
    admin = context.get_admin_context(task_id='t')
    assert admin.is_admin and 'admin' in admin.roles and admin.task_id == 't'
    ctx = _ctx()
    up = ctx.elevated()
    assert up.is_admin and 'admin' in up.roles
    assert not ctx.is_admin and 'admin' not in ctx.roles
