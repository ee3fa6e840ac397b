"""The image's files, checked for what can drift without a container engine
(none runs here): what the build may take from the host, where the
Containerfile says the connection file lives, and the group that the image's
user and the pod template agree on."""

import os
import re
import subprocess

from sandpit_testing import ROOT, SANDPIT


def read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


def test_the_build_takes_no_binary_or_node_packages_from_the_host():
    patterns = set(read(".containerignore").split("\n"))
    for needed in ("build/", "build-*/", "tests/node/node_modules", ".git/"):
        assert needed in patterns, needed
    # docker reads .dockerignore only: the same file.
    assert os.path.realpath(os.path.join(ROOT, ".dockerignore")) == \
        os.path.realpath(os.path.join(ROOT, ".containerignore"))
    text = read("Containerfile")
    assert "rm -rf /src/build && make -C /src all" in text


def test_the_containerfile_puts_the_connection_file_where_the_readme_does():
    text = read("Containerfile")
    assert "jupyter/runtime" not in text.replace("not in\n# the Jupyter runtime", "")
    assert "sandpit-<pid>-gateway-XXXXXXXX" in text
    assert "sandpit-<pid>-gateway-XXXXXXXX/kernel-<kernel\n   id>.json" in read("README.md")


def test_the_pod_group_is_the_image_users(tmp_path):
    text = read("Containerfile")
    gid = re.search(r"groupadd --gid (\d+) jovyan", text).group(1)
    assert re.search(r"useradd .*--uid 1000 --gid %s jovyan" % gid, text)
    subprocess.run([SANDPIT, "install", "--prefix", str(tmp_path), "--name", "k",
                    "--enterprise-gateway", "kubernetes"], check=True,
                   stdout=subprocess.DEVNULL)
    template = (tmp_path / "share/jupyter/kernels/k/scripts/kernel-pod.yaml.j2").read_text()
    assert "fsGroup: {{ (kernel_gid if kernel_gid is defined else %s) | int }}" % gid \
        in template
    assert "c.KubeSpawner.fs_gid = %s" % gid in read("docs/scale.md")
