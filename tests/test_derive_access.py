"""user_in_render_group: the groups `id` or `groups` list for the user, or the group database beside a shell prompt."""

from __future__ import annotations

import pytest

from tests.conftest import derived_case, fact_values


@pytest.mark.parametrize(("text", "expected"), [
    # id, as coreutils prints it
    ("$ id\nuid=1000(ana) gid=1000(ana) groups=1000(ana),4(adm),44(video),109(render)", ["yes"]),
    ("$ id\nuid=1000(ana) gid=1000(ana) groups=1000(ana),4(adm),27(sudo),44(video)", ["video only"]),
    ("$ id\nuid=1000(ana) gid=1000(ana) groups=1000(ana),4(adm),27(sudo),46(plugdev)", ["no"]),
    # groups USER
    ("$ groups nico\nnico : nico adm cdrom sudo dip video plugdev lpadmin sambashare", ["video only"]),
    ("$ groups ana\nana : ana adm sudo render video", ["yes"]),
    # root may open the nodes whatever its groups
    ("root@box:/# id\nuid=0(root) gid=0(root) groups=0(root)", ["yes"]),
    # the group database compared with the user of the prompt
    ("(venv) loong@home:~$ python -c 'import torch'\n$ getent group render video\nrender:x:109:A\nvideo:x:44:A", ["no"]),
    ("loong@home:~$ getent group render video\nrender:x:109:loong\nvideo:x:44:", ["yes"]),
    ("loong@home:~$ getent group video render\nvideo:x:44:loong\nrender:x:109:", ["video only"]),
    # a prompt without the group database, or the database without a user: no verdict
    ("loong@home:~$ rocminfo", []),
    ("render:x:109:A\nvideo:x:44:A", []),
    # "key : words" of another program is no groups listing
    ("Device : Navi 31 gfx1100 ready", []),
])
def test_membership_is_read_from_machine_output(text: str, expected: list[str]) -> None:
    assert fact_values(derived_case(text), "user_in_render_group") == expected


def test_a_sentence_about_groups_is_not_a_listing() -> None:
    text = "I think my account is fine since uid=1000(ana) gid=1000(ana) groups=1000(ana) was what I saw yesterday when I checked it."
    assert fact_values(derived_case(text), "user_in_render_group") == []
