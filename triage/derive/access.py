"""Whether the user who ran the case's commands is in the group that may open the GPU's device nodes:
``user_in_render_group``.

Since ROCm 5 on most distributions /dev/kfd and the render nodes belong to the ``render`` group (``video`` on older
releases and some distributions), so a user outside both finds no GPU while root does. The fact is ``yes`` when
``id`` or ``groups`` lists ``render`` for the user (or the user is root), ``video only`` when they list ``video``
but not ``render``, and ``no`` when they list neither. Without such a listing, the group database's member lists
(``getent group``) are compared with the user a shell prompt names, which needs the render line at least (the
database names a group's added members, not the users whose primary group it is, which for render is nobody).
"""

from __future__ import annotations

from triage.model import Case, Fact


def _verdict(groups: set[str]) -> str:
    return "yes" if "render" in groups else "video only" if "video" in groups else "no"


def derive(case: Case) -> None:
    user = case.fact("account_user")
    if user is None:
        return
    if user.value == "root":
        case.add_fact("user_in_render_group", "yes", user.where, user.text, 40)
        return
    if listed := case.fact("account_groups"):
        case.add_fact("user_in_render_group", _verdict(set(listed.value.split(","))), listed.where, listed.text, 50)
        return
    render: Fact | None = case.fact("group_members_render")
    if render is None:
        return
    video = case.fact("group_members_video")
    groups = {name for name, members in (("render", render), ("video", video))
              if members is not None and user.value in members.value.split(",")}
    case.add_fact("user_in_render_group", _verdict(groups), render.where, render.text, 30)
