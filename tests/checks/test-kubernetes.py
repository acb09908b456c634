#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""deploy/kubernetes/thpd.yaml, checked offline.

1. Schema: every object against the Kubernetes API models of Debian's python3-kubernetes (the
   OpenAPI types and field names of the API it was generated from): no unknown field (a typo
   such as "hostpath" or "readonly" is an error, not something the API server drops), every
   value of the right type, no required field missing.
2. Structure: the selector matches the pod template; every volume mount names a volume and every
   volume is mounted; the DaemonSet uses the namespace, service account and ConfigMaps defined
   beside it; thpd's --sysfs, --procfs, --runtime-dir, --config and --policy-dir name what is
   mounted there; TextfilePath= lies in the textfile mount.
3. Least privilege, as deploy/kubernetes/README.md spells it out: no host namespace, no service
   account token, every container unprivileged with no capability, no privilege escalation, a
   read-only root and RuntimeDefault seccomp; exactly the host paths of the README's table,
   each with the access it lists, and the writable bus configuration in the init container only.
4. The policies of the ConfigMap pass "thpd-ctl verify".

Usage: test-kubernetes.py THPD_CTL MANIFEST   (exit 77 without python3-yaml or python3-kubernetes)
"""

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import yaml
    import kubernetes
    import kubernetes.client as k8s
except ImportError as e:
    print(f'SKIP: {e.name} is not installed (Debian: python3-yaml, python3-kubernetes)')
    sys.exit(77)

MODELS = {
    ('v1', 'Namespace'): k8s.V1Namespace,
    ('v1', 'ServiceAccount'): k8s.V1ServiceAccount,
    ('v1', 'ConfigMap'): k8s.V1ConfigMap,
    ('apps/v1', 'DaemonSet'): k8s.V1DaemonSet,
}

# The README's table: host path -> (container, mount path, writable). Nothing else may be mounted
# from the host.
HOST_PATHS = {
    '/sys/kernel/mm': ('thpd', '/host/sys/kernel/mm', True),
    '/proc': ('thpd', '/host/proc', False),
    '/proc/pressure': ('thpd', '/host/proc/pressure', True),
    '/proc/sys/vm/compact_memory': ('thpd', '/host/proc/sys/vm/compact_memory', True),
    '/run/dbus/system_bus_socket': ('thpd', '/run/dbus/system_bus_socket', False),
    '/run/thpd': ('thpd', '/run/thpd', True),
    '/var/lib/prometheus/node-exporter': ('thpd', '/host/textfile', True),
    '/etc/dbus-1/system.d': ('install-bus-policy', '/host/dbus-system.d', True),
}
# The bus socket is also mounted, read-only, into the init container that reloads the bus.
EXTRA_HOST_MOUNTS = {('install-bus-policy', '/run/dbus/system_bus_socket', False)}

errors = []


def error(message):
    errors.append(message)


PRIMITIVES = {'str': str, 'int': int, 'bool': bool, 'float': (int, float)}


def check_value(value, type_name, where):
    """Checks value against an OpenAPI type name of the client ("V1PodSpec", "list[V1Volume]",
    "dict(str, str)", "str", "object")."""
    if value is None:
        return
    if type_name.startswith('list['):
        if not isinstance(value, list):
            return error(f'{where}: a list expected, not {value!r}')
        for i, item in enumerate(value):
            check_value(item, type_name[5:-1], f'{where}[{i}]')
        return
    match = re.fullmatch(r'dict\(str, (.+)\)', type_name)
    if match:
        if not isinstance(value, dict):
            return error(f'{where}: a mapping expected, not {value!r}')
        for key, item in value.items():
            if not isinstance(key, str):
                error(f'{where}: key {key!r} is not a string')
            check_value(item, match.group(1), f'{where}.{key}')
        return
    if type_name == 'object':
        return
    if type_name in PRIMITIVES:
        # YAML's true is not an int, and 1 is not a string.
        if isinstance(value, bool) and type_name != 'bool' or not isinstance(value, PRIMITIVES[type_name]):
            error(f'{where}: {type_name} expected, not {value!r}')
        return
    check_object(value, getattr(k8s, type_name), where)


def check_object(data, model, where):
    """Checks a mapping against a model class; returns the model instance (for required fields,
    which the client's constructors check)."""
    if not isinstance(data, dict):
        error(f'{where}: a {model.__name__} mapping expected, not {data!r}')
        return
    by_json = {json: python for python, json in model.attribute_map.items()}
    for key, value in data.items():
        if key not in by_json:
            error(f'{where}: {model.__name__} has no field "{key}"')
            continue
        check_value(value, model.openapi_types[by_json[key]], f'{where}.{key}')
    try:
        # Nested values stay raw: only this level's required fields are what is checked here.
        model(**{by_json[k]: v for k, v in data.items() if k in by_json})
    except ValueError as e:
        error(f'{where}: {e}')


def mounts_of(container):
    return {m['name']: m for m in container.get('volumeMounts', [])}


def arg_values(args, option):
    prefix = f'--{option}='
    return [a[len(prefix):] for a in args if a.startswith(prefix)]


def check_security(pod, containers):
    for field in ('hostPID', 'hostNetwork', 'hostIPC'):
        if pod.get(field) is not False:
            error(f'pod: {field} must be false, spelled out')
    if pod.get('automountServiceAccountToken') is not False:
        error('pod: automountServiceAccountToken must be false: thpd needs no API access')
    pod_seccomp = pod.get('securityContext', {}).get('seccompProfile', {}).get('type')
    for c in containers:
        sc = c.get('securityContext', {})
        name = c['name']
        if sc.get('privileged') is not False:
            error(f'{name}: privileged must be false, spelled out')
        if sc.get('allowPrivilegeEscalation') is not False:
            error(f'{name}: allowPrivilegeEscalation must be false')
        if sc.get('readOnlyRootFilesystem') is not True:
            error(f'{name}: readOnlyRootFilesystem must be true')
        caps = sc.get('capabilities', {})
        if caps.get('drop') != ['ALL'] or caps.get('add'):
            error(f'{name}: capabilities must drop ALL and add none, not {caps}')
        if sc.get('seccompProfile', {}).get('type', pod_seccomp) != 'RuntimeDefault':
            error(f'{name}: seccomp profile RuntimeDefault expected')


def check_host_paths(volumes, containers):
    host = {v['name']: v['hostPath']['path'] for v in volumes if 'hostPath' in v}
    if set(host.values()) != set(HOST_PATHS):
        error(f'host paths {sorted(host.values())} are not those of the README: {sorted(HOST_PATHS)}')
    seen = set()
    for c in containers:
        for m in c.get('volumeMounts', []):
            if m['name'] not in host:
                continue
            path = host[m['name']]
            mount = (c['name'], m['mountPath'], not m.get('readOnly', False))
            if mount != HOST_PATHS.get(path) and mount not in EXTRA_HOST_MOUNTS:
                error(f'{c["name"]}: {path} at {m["mountPath"]} ({"read-write" if mount[2] else "read-only"}) '
                      f'is not in the README\'s table')
            seen.add(path)
    for path in set(HOST_PATHS) - seen:
        error(f'{path} is defined but not mounted')


def check_daemonset(ds, objects, thpd_ctl):
    spec = ds['spec']
    template = spec['template']
    pod = template['spec']
    labels = template['metadata'].get('labels', {})
    for key, value in spec['selector'].get('matchLabels', {}).items():
        if labels.get(key) != value:
            error(f'selector {key}={value} does not match the pod template')
    namespace = ds['metadata'].get('namespace')
    if ('Namespace', namespace) not in objects:
        error(f'namespace {namespace} is not defined in the manifest')
    if ('ServiceAccount', pod.get('serviceAccountName')) not in objects:
        error(f'service account {pod.get("serviceAccountName")} is not defined in the manifest')

    containers = pod.get('initContainers', []) + pod['containers']
    volumes = {v['name']: v for v in pod.get('volumes', [])}
    used = set()
    for c in containers:
        for m in c.get('volumeMounts', []):
            if m['name'] not in volumes:
                error(f'{c["name"]}: mount of undefined volume {m["name"]}')
            used.add(m['name'])
    for name, v in volumes.items():
        if name not in used:
            error(f'volume {name} is not mounted')
        if 'configMap' in v and ('ConfigMap', v['configMap']['name']) not in objects:
            error(f'volume {name}: ConfigMap {v["configMap"]["name"]} is not defined in the manifest')
    images = {c['image'] for c in containers}
    if len(images) != 1:
        error(f'the containers run different images: {images}')

    check_security(pod, containers)
    check_host_paths(list(volumes.values()), containers)

    thpd = [c for c in pod['containers'] if c['name'] == 'thpd']
    if len(thpd) != 1:
        return error('no container "thpd"')
    thpd = thpd[0]
    args = thpd.get('args', [])
    mounts = {m['mountPath']: m for m in thpd.get('volumeMounts', [])}
    for option, under in (('sysfs', '/kernel/mm'), ('procfs', '')):
        values = arg_values(args, option)
        if len(values) != 1 or values[0] + under not in mounts:
            error(f'--{option}={values} does not name the mounted host tree')
    runtime = arg_values(args, 'runtime-dir')
    if runtime != ['/run/thpd'] or not volumes.get(mounts.get('/run/thpd', {}).get('name'), {}).get('hostPath'):
        error('--runtime-dir must be /run/thpd on the host, so that a new pod finds the baseline record')

    config = arg_values(args, 'config')
    config_map = None
    if len(config) == 1:
        mount_dir, key = os.path.split(config[0])
        volume = volumes.get(mounts.get(mount_dir, {}).get('name'), {})
        config_map = objects.get(('ConfigMap', volume.get('configMap', {}).get('name')))
    if not config_map or key not in config_map.get('data', {}):
        error(f'--config={config} does not name a key of a mounted ConfigMap')
    else:
        textfile = re.search(r'^TextfilePath=(\S+)$', config_map['data'][key], re.MULTILINE)
        if not textfile or os.path.dirname(textfile.group(1)) not in mounts or \
                mounts[os.path.dirname(textfile.group(1))].get('readOnly'):
            error('TextfilePath= in thpd.conf is not in a writable mount of the thpd container')

    policy_dirs = arg_values(args, 'policy-dir')
    for shipped in ('/usr/lib/thpd/policy.d', '/usr/share/thpd/policy.d'):
        if shipped not in policy_dirs:
            error(f'the shipped policies of the image ({shipped}) are not in --policy-dir')
    copied = [d for d in policy_dirs if d not in ('/usr/lib/thpd/policy.d', '/usr/share/thpd/policy.d')]
    copier = [c for c in pod.get('initContainers', []) if c['name'] == 'copy-policies']
    if len(copied) != 1 or not copier or not any(copied[0].startswith(m['mountPath'] + '/')
                                                 for m in copier[0].get('volumeMounts', [])):
        error('the ConfigMap policies must be copied into the --policy-dir thpd reads (ConfigMap mounts are '
              'world-writable, which thpd does not trust)')

    policies = objects.get(('ConfigMap', 'thpd-policies'), {}).get('data', {})
    if not policies:
        error('no policies in ConfigMap thpd-policies')
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in policies.items():
            if not name.endswith('.conf'):
                error(f'ConfigMap thpd-policies: {name} does not end in .conf; thpd would not read it')
                continue
            path = Path(tmp) / name
            path.write_text(text)
            path.chmod(0o644)
            env = dict(os.environ, THPD_TRUSTED_UID=str(os.getuid()))
            proc = subprocess.run([thpd_ctl, 'verify', str(path)], capture_output=True, text=True, env=env)
            if proc.returncode != 0 or proc.stdout.strip() or proc.stderr.strip():
                error(f'ConfigMap thpd-policies: {name} is not clean for thpd-ctl verify:\n{proc.stdout}{proc.stderr}')


def main():
    thpd_ctl, manifest = sys.argv[1], sys.argv[2]
    docs = [d for d in yaml.safe_load_all(Path(manifest).read_text()) if d is not None]
    objects = {}
    for i, doc in enumerate(docs):
        key = (doc.get('apiVersion'), doc.get('kind'))
        where = f'{manifest}: document {i + 1} ({key[1]} {doc.get("metadata", {}).get("name")})'
        if key not in MODELS:
            error(f'{where}: no schema for {key}')
            continue
        check_object(doc, MODELS[key], where)
        objects[(doc['kind'], doc['metadata']['name'])] = doc
    readme = Path(manifest).parent / 'README.md'
    documented = set(re.findall(r'^\| `(/[^`]+)` \|', readme.read_text(), re.MULTILINE)) if readme.exists() else set()
    if documented != set(HOST_PATHS):
        error(f'{readme} lists the host paths {sorted(documented)}, this test {sorted(HOST_PATHS)}')
    daemonsets = [d for (kind, _), d in objects.items() if kind == 'DaemonSet']
    if len(daemonsets) != 1:
        error(f'{len(daemonsets)} DaemonSets, expected 1')
    else:
        check_daemonset(daemonsets[0], objects, thpd_ctl)

    for e in errors:
        print(f'FAIL: {e}')
    if errors:
        return 1
    print(f'ok: {len(docs)} objects ({", ".join(k for k, _ in objects)}) match the API models of python3-kubernetes '
          f'{kubernetes.__version__} and the privileges of the README')
    return 0


if __name__ == '__main__':
    sys.exit(main())
