"""rocm_version from TheRock's wheels: a release named in the local version (``+rocm7.0.0rc...``, a development
build's ``+devrocm7.12.0.dev0.<commit>``, pip's percent-encoded ``%2B`` in a download line), and a nightly's date,
which is no version number (parsers/versions.py, derive/versions.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import derived_case, fact_values

FIXTURES = Path(__file__).parent / "fixtures" / "facts"


def test_therock_development_build_names_its_release() -> None:
    # pip installing a TheRock development build of torch: https://github.com/ROCm/TheRock/pull/2877
    case = derived_case((FIXTURES / "therock-devrocm-install.txt").read_text())
    assert set(fact_values(case, "rocm_version_wheel")) == {"7.12.0"}
    assert len(fact_values(case, "rocm_version_wheel")) == 3  # the command, pip's Collecting and its percent-encoded URL
    assert case.value("rocm_version") == "7.12"
    assert fact_values(case, "rocm_build_date") == []  # a commit is no date


def test_percent_encoded_local_version_in_a_download_line() -> None:
    line = "  Downloading https://rocm.devreleases.amd.com/v2-staging/gfx94X-dcgpu/torch-2.7.1%2Bdevrocm7.12.0.dev0.7c3980399067355e9c158fe264de02f29610a841-cp312-cp312-linux_x86_64.whl (721.0 MB)\n"
    assert derived_case(line).value("rocm_version") == "7.12"


def test_a_nightly_tag_names_release_and_date_apart() -> None:
    # TheRock's nightly torch names the coming release and the build date (torch 2.10.0+rocm7.13.0a20260513)
    case = derived_case("torch==2.10.0+rocm7.13.0a20260513\n")
    assert case.value("rocm_version") == "7.13"
    assert fact_values(case, "rocm_build_date") == ["2026-05-13"]
    assert fact_values(case, "rocm_sdk_date") == []


def test_a_date_only_tag_gives_no_version_of_its_own() -> None:
    # torch 2.7.0a0+rocmsdk20250620: the SDK's build date only; the release comes from tables/rocm-wheels.yaml
    # (rocm_version_dated), never as a version read from the line
    case = derived_case("torch                     2.7.0a0+rocmsdk20250620\n")
    assert fact_values(case, "rocm_version_wheel") == []
    assert fact_values(case, "rocm_sdk_date") == ["2025-06-20"]
    assert case.value("rocm_version") == case.value("rocm_version_dated") == "6.5"
    # beside a wheel that names its release, the date adds no second one
    both = derived_case("torch                     2.7.0a0+rocmsdk20250620\nrocm-sdk-core==7.0.0rc20250626\n")
    assert fact_values(both, "rocm_versions") == ["7.0"]


def test_rocm_wheel_tag_is_not_read_inside_other_words() -> None:
    assert fact_values(derived_case("pytorch-triton-rocm 3.1.0\n"), "rocm_version_wheel") == []
    assert fact_values(derived_case("build 2.5.1+rocmx\n"), "rocm_version_wheel") == []


def test_tensorflow_rocm_version_names_the_rocm_release_it_was_built_for() -> None:
    # tensorflow-rocm's versions are TensorFlow's and the ROCm release's digits (2.14.0.600: ROCm 6.0.0), in pip list's
    # columns, pip freeze and a wheel's file name; the package name is no "ROCm 2.14" of the system
    for line, release in (("tensorflow-rocm          2.14.0.600\n", "6.0"),
                          ("tensorflow-rocm==2.11.1.550\n", "5.5"),
                          ("Saved ./tensorflow_rocm-2.13.0.570-cp310-cp310-manylinux2014_x86_64.whl\n", "5.7")):
        case = derived_case(line)
        assert fact_values(case, "rocm_version_wheel") == [release], line
        assert fact_values(case, "rocm_version_system") == [], line
        assert case.value("rocm_version") == release, line


def test_a_rocm_release_stated_as_such_is_the_system_one() -> None:
    for line, release in (("ROCm version: 6.1.2\n", "6.1.2"), ("System ROCm 5.7.1\n", "5.7.1")):
        assert fact_values(derived_case(line), "rocm_version_system") == [release]
