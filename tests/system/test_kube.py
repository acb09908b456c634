# SPDX-License-Identifier: LGPL-2.1-or-later
"""The DaemonSet layer: deploy/kubernetes/thpd.yaml played by a real container engine, following
a real node's systemd.

No kubelet or API server can run here; podman's "kube play" reads the same manifest (kind:
DaemonSet from podman 4.7 on). The pieces:

The node
    A booted Debian 13 container of the system layer (container.py: systemd as PID 1, its own
    system bus, the host's real /sys/kernel/mm bound in), with Debian's redis-server installed
    and stopped, and without thpd: the pod brings it. Its /run/dbus is a directory of the host
    (--bind), so that the engine can mount the node's bus socket where the manifest mounts the
    host's. It shares the host's network, as the system layer's containers do: its Redis
    listens on the host's port 6379, so the layer cannot run beside a Redis there or beside
    the system layer.

The engine
    Debian 13's podman, runc, conmon and catatonit in a tree of their own made by mmdebstrap
    (cached under the build directory, like the node's rootfs): Debian 12's podman 4.3 refuses
    kind: DaemonSet. It runs in a mount namespace of its own whose root is that tree (held by an
    "unshare --mount" process this layer starts and ends), where the node's files stand at the
    host paths of the manifest: the bus socket's directory, /etc/dbus-1/system.d and the
    node-exporter textfile directory. /proc, /sys and /dev are the host's, so the pod writes the
    machine's real THP knobs. Its container storage is emptied at every run.

The image
    Built in the engine from deploy/kubernetes/Containerfile with no registry: a Debian 12
    minbase tree holding the .deb's dependencies (mmdebstrap, cached), "podman import"ed as the
    BASE build argument, then "podman build --pull=never --network=none" installs the .deb.

The manifest is played as it is, with one key more in the thpd-policies ConfigMap: a policy for
the node's redis-server.service. Quirks of this machine set in the engine's containers.conf:
runc (crun refuses hybrid cgroups), default_ulimits (the bounding set lacks CAP_SYS_RESOURCE, so
the runtime cannot set the rlimits it would otherwise copy), cgroupfs (no systemd on the
engine's side), and --network=none (the pod needs no network).

Environment: THPD_DEB (the package; required), THPD_SYSTEM_DIR (cache and work directory,
default build-system/), THPD_SYSTEM_COUNT (gets "PASSED FAILED SKIPPED"). Run as root;
tools/kube-test.sh builds the package and does this.
"""

import contextlib
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import unittest
from pathlib import Path

import yaml

from container import (CONTAINER_PATH, Container, HostKnobs, ensure_rootfs, interrupt_on_signals, layer_status, log,
                       put_back, wait_until)

SOURCE_ROOT = Path(__file__).resolve().parents[2]
WORKDIR = Path(os.environ.get('THPD_SYSTEM_DIR', SOURCE_ROOT / 'build-system')).resolve()
KUBE = WORKDIR / 'kube'
DEB = os.environ.get('THPD_DEB')
MANIFEST = SOURCE_ROOT / 'deploy/kubernetes/thpd.yaml'
CONTAINERFILE = SOURCE_ROOT / 'deploy/kubernetes/Containerfile'

HOST = HostKnobs()
ENABLED = 'transparent_hugepage/enabled'
BASELINE = {}

ENGINE_SUITE = 'trixie'
# mount: umount, which detaches the host's root after pivot_root into the tree.
ENGINE_PACKAGES = ['podman', 'runc', 'conmon', 'catatonit', 'mount']
# kind: DaemonSet in "kube play" (podman PR #19371).
ENGINE_MIN_VERSION = (4, 7)
# The Containerfile's default base is Debian 12: the .deb built on this machine links to its
# libraries.
BASE_SUITE = 'bookworm'
BASE_IMAGE = 'localhost/thpd-base:bookworm'
# Bump when the way the engine tree or the base is made changes in a way their keys do not show.
TREE_FORMAT = 1

ENGINE_PATH = '/usr/sbin:/usr/bin:/sbin:/bin'
ENGINE_CONF = """\
[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
log_driver = "k8s-file"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""

# What the DaemonSet becomes in podman: one pod, its containers named POD-CONTAINER.
POD = 'thpd-pod'
THPD = f'{POD}-thpd'
BUS_POLICY = '/etc/dbus-1/system.d/org.thpd1.conf'
TEXTFILE = '/var/lib/prometheus/node-exporter/thpd.prom'
REDIS = 'redis-server.service'
REDIS_POLICY = """\
[Policy]
Description=No THP while the node's Redis runs
Units=redis-server.service

[TransparentHugePages]
Enabled=never
"""

DEADLINE = 90.0


def tree_key(*parts):
    return hashlib.sha256(repr((TREE_FORMAT, *parts)).encode()).hexdigest()[:12]


def mmdebstrap(name, target, arguments):
    """Runs mmdebstrap to make target (a directory or a tarball) unless it is there; its output
    goes to WORKDIR/NAME.log. Returns target."""
    if target.exists():
        return target
    # A prefix, not a suffix: mmdebstrap picks a tarball or a directory by the name's ending.
    partial = target.with_name('partial-' + target.name)
    if partial.is_dir():
        shutil.rmtree(partial)
    else:
        partial.unlink(missing_ok=True)
    command = ['mmdebstrap', *arguments, str(partial)]
    log(f'making the {name}: ' + ' '.join(command))
    start = time.monotonic()
    with open(WORKDIR / f'{name}.log', 'w') as output:
        proc = subprocess.run(command, stdout=output, stderr=subprocess.STDOUT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f'mmdebstrap failed ({proc.returncode}); see {WORKDIR / f"{name}.log"}')
    partial.rename(target)
    log(f'{name} ready in {time.monotonic() - start:.1f} s')
    return target


def ensure_engine_tree():
    tree = WORKDIR / f'engine-{tree_key(ENGINE_SUITE, ENGINE_PACKAGES)}'
    return mmdebstrap('engine', tree, ['--variant=apt', '--include=' + ','.join(ENGINE_PACKAGES), ENGINE_SUITE])


def deb_dependencies(deb):
    """The packages the .deb depends on: the first of each set of alternatives, no versions."""
    text = subprocess.run(['dpkg-deb', '-f', deb, 'Depends'], capture_output=True, text=True, check=True).stdout
    return sorted({re.split(r'[\s(:]', item.split('|')[0].strip())[0] for item in text.split(',') if item.strip()})


def ensure_image_base(deb):
    """A Debian minbase tarball with the .deb's dependencies and no apt sources: "apt-get update"
    then fetches nothing, and "apt-get install ./thpd.deb" in the Containerfile finds all it
    needs with no network."""
    depends = deb_dependencies(deb)
    tarball = WORKDIR / f'image-base-{tree_key(BASE_SUITE, depends)}.tar'
    return mmdebstrap('image-base', tarball, [
        '--variant=minbase', '--include=' + ','.join(depends),
        '--customize-hook=rm -f "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/*', BASE_SUITE])


class Engine:
    """podman in a mount namespace of its own whose root is its tree. shares: (directory of the
    host, path in the tree) pairs bound in. The host's WORKDIR is at /srv/work."""

    def __init__(self, tree, shares):
        self.tree = Path(tree)
        self.shares = list(shares)
        self.holder = None

    def start(self):
        # The previous run's storage: its mounts died with its namespace.
        shutil.rmtree(self.tree / 'var/lib/containers', ignore_errors=True)
        (self.tree / 'etc/containers/containers.conf').write_text(ENGINE_CONF)
        # The tree becomes the namespace's root with pivot_root, as a container's rootfs does,
        # not a chroot: runc pivots a container's root within the namespace it creates, and
        # "podman exec" then enters that namespace's root, which under a chroot would be the
        # host's file system, not the container's. The tree's root must be a mount point for
        # both pivot_root and containers/storage.
        script = """set -e
            R=$1; W=$2; shift 2
            mount --bind "$R" "$R"
            mount --rbind /proc "$R/proc"
            mount --rbind /sys "$R/sys"
            mount --rbind /dev "$R/dev"
            mount -t tmpfs -o mode=0755 tmpfs "$R/run"
            mount -t tmpfs tmpfs "$R/tmp"
            mkdir -p "$R/srv/work"
            mount --bind "$W" "$R/srv/work"
            while [ $# -gt 0 ]; do
                mkdir -p "$R$2"
                mount --bind "$1" "$R$2"
                shift 2
            done
            cd "$R"
            pivot_root . .
            umount -l .
            exec sleep infinity"""
        argv = [str(self.tree), str(WORKDIR)]
        for outside, inside in self.shares:
            argv += [str(outside), inside]
        self.holder = subprocess.Popen(['unshare', '--mount', '--propagation', 'private', '--',
                                        'sh', '-c', script, '-', *argv],
                                       stdin=subprocess.DEVNULL, start_new_session=True)
        wait_until(self._ready, 60, 'the engine\'s mount namespace')
        return self

    def _ready(self):
        if self.holder.poll() is not None:
            raise AssertionError(f'setting up the engine\'s mount namespace failed ({self.holder.returncode})')
        with contextlib.suppress(OSError):
            return Path(f'/proc/{self.holder.pid}/comm').read_text().strip() == 'sleep'
        return False

    def command(self, *argv):
        return ['nsenter', '-t', str(self.holder.pid), '-m', '-r', '-w', '--',
                'env', '-i', f'PATH={ENGINE_PATH}', 'HOME=/root', 'LANG=C.UTF-8',
                'PODMAN_IGNORE_CGROUPSV1_WARNING=1', *map(str, argv)]

    def podman(self, *argv, check=True, timeout=600):
        proc = subprocess.run(self.command('podman', *argv), capture_output=True, text=True, check=False,
                              timeout=timeout)
        if check and proc.returncode != 0:
            raise AssertionError(f'podman {" ".join(map(str, argv))} exited {proc.returncode}\n'
                                 f'stdout:\n{proc.stdout[-4000:]}\nstderr:\n{proc.stderr[-4000:]}')
        return proc

    def version(self):
        text = self.podman('version', '--format', '{{.Client.Version}}').stdout.strip()
        return tuple(int(n) for n in re.findall(r'\d+', text)[:2]), text

    def stop(self):
        """Removes every pod and container it made, then ends the namespace's holder."""
        if self.holder is None:
            return
        with contextlib.suppress(Exception):
            self.podman('pod', 'rm', '--all', '--force', '--time', '30', check=False, timeout=120)
            self.podman('rm', '--all', '--force', '--time', '30', check=False, timeout=120)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.holder.pid, signal.SIGTERM)
        self.holder.wait()
        self.holder = None
        # The image and the pod's layers (some 200 MB): the next run builds its own.
        shutil.rmtree(self.tree / 'var/lib/containers', ignore_errors=True)


# Filled by setUpClass, kept for the report at the end.
NODE = None
ENGINE = None
SEEN = []


def seen(what):
    """Logs and keeps one observation of the real knob."""
    value = HOST.read(ENABLED)
    SEEN.append((what, value))
    log(f'enabled = {value} ({what})')
    return value


class KubeTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        global NODE, ENGINE
        shutil.rmtree(KUBE, ignore_errors=True)
        (KUBE / 'node-run-dbus').mkdir(parents=True)
        NODE = Container(ROOTFS, WORKDIR / 'run', 'thpd-kube-node', binds=[(KUBE / 'node-run-dbus', '/run/dbus')])
        NODE.start()
        log(f'node booted in {NODE.boot_seconds:.1f} s')
        NODE.run('apt-get', 'install', '-q', '-y', 'redis-server')
        NODE.run('systemctl', 'stop', REDIS)
        assert not NODE.path(BUS_POLICY).exists(), 'the node has thpd\'s bus policy before the pod ran'
        textfile_dir = NODE.path(TEXTFILE).parent
        textfile_dir.mkdir(parents=True, exist_ok=True)
        cls.reload_cursor = NODE.cursor()

        # Kept before it starts, so that tearDownClass ends a start that failed half-way.
        ENGINE = Engine(ENGINE_TREE, [(KUBE / 'node-run-dbus', '/run/dbus'),
                                      (NODE.path('/etc/dbus-1/system.d'), '/etc/dbus-1/system.d'),
                                      (textfile_dir, str(Path(TEXTFILE).parent))])
        ENGINE.start()
        _, cls.engine_version = ENGINE.version()
        log(f'engine: podman {cls.engine_version}')
        context = KUBE / 'image'
        context.mkdir()
        shutil.copy(CONTAINERFILE, context)
        shutil.copy(DEB, context)
        # The PATH a Debian image from a registry sets: "kubectl exec ds/thpd -- thpd-ctl" needs it.
        ENGINE.podman('import', f'--change=ENV PATH={CONTAINER_PATH}', f'/srv/work/{IMAGE_BASE.name}', BASE_IMAGE)
        start = time.monotonic()
        ENGINE.podman('build', '--pull=never', '--network=none', f'--build-arg=BASE={BASE_IMAGE}',
                      '-t', cls.image_name(), '/srv/work/kube/image')
        log(f'image built in {time.monotonic() - start:.1f} s')

        documents = list(yaml.safe_load_all(MANIFEST.read_text()))
        policies = next(d for d in documents if d['kind'] == 'ConfigMap' and d['metadata']['name'] == 'thpd-policies')
        policies['data']['redis.conf'] = REDIS_POLICY
        (KUBE / 'thpd.yaml').write_text(yaml.safe_dump_all(documents, sort_keys=False))
        seen('before the pod')
        ENGINE.podman('kube', 'play', '--network=none', '/srv/work/kube/thpd.yaml')
        log('played')

    @classmethod
    def tearDownClass(cls):
        """Also called by main() after a setUpClass that failed half-way; a second call does
        nothing."""
        global NODE, ENGINE
        engine, ENGINE = ENGINE, None
        node, NODE = NODE, None
        if engine:
            engine.stop()
        if node:
            with contextlib.suppress(Exception):
                (KUBE / 'node.journal').write_text(
                    node.run('journalctl', '--no-pager', '-o', 'short-precise', check=False).stdout)
            node.stop()
            node.remove()

    @staticmethod
    def image_name():
        """The image the manifest names (every container uses the same)."""
        documents = yaml.safe_load_all(MANIFEST.read_text())
        daemonset = next(d for d in documents if d['kind'] == 'DaemonSet')
        images = {c['image'] for key in ('initContainers', 'containers') for c in daemonset['spec']['template']['spec'][key]}
        assert len(images) == 1, images
        return images.pop()

    # -- helpers

    def wait_enabled(self, value, what):
        wait_until(lambda: HOST.read(ENABLED) == value, DEADLINE, lambda: f'enabled {value}, it is {HOST.read(ENABLED)}')
        seen(what)

    def owns_name(self):
        proc = NODE.run('busctl', 'call', 'org.freedesktop.DBus', '/org/freedesktop/DBus', 'org.freedesktop.DBus',
                        'NameHasOwner', 's', 'org.thpd1', check=False)
        return proc.stdout.strip() == 'b true'

    def pod_pids(self):
        """{container name: [PIDs of its processes]} for every running container of the pod; the
        engine shares the host's PID namespace. The infra container is podman's, under the name
        "infra"."""
        infra = ENGINE.podman('pod', 'inspect', '--format', '{{.InfraContainerID}}', POD).stdout.strip()
        pids = {}
        listing = ENGINE.podman('ps', '--filter', f'pod={POD}', '--format', '{{.ID}} {{.Names}}', '--no-trunc').stdout
        for line in listing.splitlines():
            ident, name = line.split()
            top = ENGINE.podman('top', ident, 'hpid').stdout.split()[1:]
            pids['infra' if ident == infra else name] = [int(pid) for pid in top]
        return pids

    def status(self):
        return ENGINE.podman('exec', THPD, 'thpd-ctl', 'status').stdout

    # -- the checks, in order

    def test_1_image(self):
        """The image is the base with thpd's package and nothing else installed."""
        def packages(image):
            out = ENGINE.podman('run', '--rm', '--network=none', '--entrypoint=dpkg-query', image,
                                '-W', '-f=${Package}\\n').stdout
            return set(out.split())
        added = packages(self.image_name()) - packages(BASE_IMAGE)
        self.assertEqual(added, {'thpd'})

    def test_2_bus_policy(self):
        """install-bus-policy put org.thpd1.conf on the node and reloaded the node's bus."""
        wait_until(lambda: NODE.path(BUS_POLICY).exists(), DEADLINE, f'{BUS_POLICY} on the node')
        shipped = subprocess.run(['dpkg-deb', '--fsys-tarfile', DEB], capture_output=True, check=True).stdout
        inside = subprocess.run(['tar', '-xOf', '-', './usr/share/dbus-1/system.d/org.thpd1.conf'], input=shipped,
                                capture_output=True, check=True).stdout
        self.assertEqual(NODE.path(BUS_POLICY).read_bytes(), inside)
        self.assertEqual(NODE.path(BUS_POLICY).stat().st_mode & 0o7777, 0o644)
        wait_until(lambda: 'Reloaded configuration' in NODE.journal(after=self.reload_cursor, unit='dbus.service'),
                   DEADLINE, 'the node\'s dbus-daemon to reload its configuration')

    def test_3_owns_name(self):
        """thpd in the pod owns org.thpd1 on the node's bus."""
        wait_until(self.owns_name, DEADLINE, 'org.thpd1 on the node\'s bus')

    def test_4_confined(self):
        """No process of the pod has a capability; thpd runs with no new privileges, seccomp and
        a read-only root."""
        wait_until(self.owns_name, DEADLINE, 'org.thpd1 on the node\'s bus')
        pids = self.pod_pids()
        self.assertEqual(set(pids), {THPD, 'infra'})
        self.assertTrue(pids[THPD])
        for name, processes in pids.items():
            for pid in processes:
                status = dict(line.split(':\t', 1) for line in Path(f'/proc/{pid}/status').read_text().splitlines())
                log(f'{name}: PID {pid} ({status["Name"]}), uid {status["Uid"].split()[0]}, CapEff {status["CapEff"]}, '
                    f'NoNewPrivs {status["NoNewPrivs"]}, Seccomp {status["Seccomp"]}')
                # The infra container is the engine's, not the manifest's: podman gives its
                # catatonit the engine's default capabilities (deploy/kubernetes/README.md).
                if name == 'infra':
                    continue
                self.assertEqual(int(status['CapEff'], 16), 0, name)
                self.assertEqual(status['NoNewPrivs'], '1')
                self.assertEqual(status['Seccomp'], '2')
        root = [line.split() for line in Path(f'/proc/{pids[THPD][0]}/mountinfo').read_text().splitlines()
                if line.split()[4] == '/']
        self.assertTrue(root)
        self.assertIn('ro', root[-1][5].split(','), root[-1])
        proc = ENGINE.podman('exec', THPD, 'touch', '/probe', check=False)
        self.assertNotEqual(proc.returncode, 0)
        self.assertIn('Read-only file system', proc.stderr)

    def test_5_textfile(self):
        """The metrics reach node_exporter's textfile directory on the node."""
        path = NODE.path(TEXTFILE)
        wait_until(lambda: path.exists() and 'thpd_' in path.read_text(), DEADLINE, f'{TEXTFILE} on the node')

    def test_6_redis(self):
        """The ConfigMap's policy follows the node's redis-server: never while it runs, the
        baseline back when it stops; thpd-ctl status in the pod says so."""
        wait_until(self.owns_name, DEADLINE, 'org.thpd1 on the node\'s bus')
        self.assertEqual(seen('thpd running, Redis stopped'), BASELINE[ENABLED])
        NODE.run('systemctl', 'start', REDIS)
        self.wait_enabled('never', 'Redis started')
        wait_until(lambda: 'redis.conf' in self.status(), DEADLINE, 'redis.conf in thpd-ctl status')
        status = self.status()
        log(f'thpd-ctl status with Redis running:\n{status}')
        self.assertRegex(status, rf'\benabled\s+never\s+\(baseline {BASELINE[ENABLED]}\)\s+redis\.conf for {REDIS}')
        NODE.run('systemctl', 'stop', REDIS)
        self.wait_enabled(BASELINE[ENABLED], 'Redis stopped')
        wait_until(lambda: 'redis.conf' not in self.status(), DEADLINE, 'redis.conf gone from thpd-ctl status')

    def test_7_down(self):
        """kube play --down: thpd restores the baseline and removes its metrics within the grace
        period, although Redis still runs on the node."""
        NODE.run('systemctl', 'start', REDIS)
        self.wait_enabled('never', 'Redis started again')
        # thpd's log file (k8s-file: "TIME STREAM F|P TEXT" lines), opened first: --down
        # removes it with the container. "podman logs --follow" may end before the last lines.
        path = ENGINE.podman('inspect', '--format', '{{.HostConfig.LogConfig.Path}}', THPD).stdout.strip()
        with open(ENGINE.tree / path.lstrip('/')) as log_file:
            ENGINE.podman('kube', 'play', '--down', '/srv/work/kube/thpd.yaml')
            text = log_file.read()
        pod_log = ''.join(line.split(' ', 3)[3] + '\n' for line in text.splitlines() if line.count(' ') >= 3)
        (KUBE / 'thpd-pod.log').write_text(pod_log)
        log(f'the pod\'s log:\n{pod_log}')
        self.assertRegex(pod_log, r'(?m)^enabled: never -> \S+ \(restoring the baseline\)$')
        self.assertEqual(ENGINE.podman('pod', 'exists', POD, check=False).returncode, 1)
        self.assertEqual(seen('after kube play --down'), BASELINE[ENABLED])
        self.assertFalse(NODE.path(TEXTFILE).exists())
        # dbus-daemon sees thpd's connection close on its own time.
        wait_until(lambda: not self.owns_name(), DEADLINE, 'org.thpd1 released on the node\'s bus')
        NODE.run('systemctl', 'stop', REDIS)


# --- running ----------------------------------------------------------------------------------

ROOTFS = None
ENGINE_TREE = None
IMAGE_BASE = None


def skip(reason):
    print(f'SKIP: {reason}')
    return 77


def make_trees():
    """Only makes the engine's tree, and the image's base when THPD_DEB names a package: they
    need the network, not the knobs, so tools/test.sh has them made while other layers run."""
    WORKDIR.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    ensure_engine_tree()
    if DEB:
        ensure_image_base(DEB)
    log(f'trees ready in {time.monotonic() - start:.1f} s')
    return 0


def main():
    global ROOTFS, ENGINE_TREE, IMAGE_BASE
    if os.geteuid() != 0:
        return skip('the DaemonSet layer needs root (systemd-nspawn, podman, the host\'s /sys)')
    for tool in ('systemd-nspawn', 'mmdebstrap', 'nsenter', 'unshare', 'dpkg-deb'):
        if shutil.which(tool) is None:
            return skip(f'{tool} is not installed')
    if sys.argv[1:] == ['--trees']:
        return make_trees()
    if not DEB or not Path(DEB).is_file():
        print('THPD_DEB must name the thpd .deb to test', file=sys.stderr)
        return 2
    if not os.access(Path('/sys/kernel/mm') / ENABLED, os.W_OK):
        return skip('/sys/kernel/mm/transparent_hugepage is not writable here')
    interrupt_on_signals()

    started = time.monotonic()
    WORKDIR.mkdir(parents=True, exist_ok=True)
    BASELINE.update(HOST.snapshot())
    if BASELINE[ENABLED] == 'never':
        return skip('THP "enabled" is "never" on this machine: a policy that sets never cannot be seen')
    result = None
    left = None
    try:
        t = time.monotonic()
        ROOTFS = ensure_rootfs(WORKDIR)
        try:
            ENGINE_TREE = ensure_engine_tree()
        except RuntimeError as error:
            return skip(f'no Debian {ENGINE_SUITE} tree with podman >= 4.7 can be made here: {error}')
        IMAGE_BASE = ensure_image_base(DEB)
        log(f'trees ready in {time.monotonic() - t:.1f} s')
        version = subprocess.run(['chroot', str(ENGINE_TREE), 'dpkg-query', '-W', '-f=${Version}', 'podman'],
                                 capture_output=True, text=True, check=True).stdout
        if tuple(int(n) for n in re.findall(r'\d+', version)[:2]) < ENGINE_MIN_VERSION:
            return skip(f'Debian {ENGINE_SUITE}\'s podman is {version}; kube play takes DaemonSets from 4.7 on')
        program = unittest.main(module='__main__', exit=False, verbosity=2)
        result = program.result
    except KeyboardInterrupt as error:
        log(f'interrupted: {error}')
    finally:
        with contextlib.suppress(Exception):
            KubeTest.tearDownClass()
        left = put_back(HOST, BASELINE)
    print('\nenabled, as seen: ' + '; '.join(f'{value} ({what})' for what, value in SEEN), file=sys.stderr)
    print(f'DaemonSet layer: {time.monotonic() - started:.1f} s in all', file=sys.stderr)
    return layer_status(result, left)


if __name__ == '__main__':
    sys.exit(main())
