/* launcher_spec: kernelspecs for Enterprise Gateway's process proxies.
 *
 * The gateway fills in {kernel_id}, {response_address}, {public_key} and
 * {port_range} in argv (its RemoteKernelManager.format_kernel_cmd, after
 * jupyter_client's own {connection_file} and {resource_dir}). With the
 * DistributedProcessProxy, argv is run as it is on a remote host over SSH, so
 * it starts sandpit itself. With the KubernetesProcessProxy, argv runs on the
 * gateway: the gateway's launch_kubernetes.py, which renders the
 * kernel-pod.yaml.j2 beside it (Jinja2, with the KERNEL_* variables in lower
 * case) and creates the pod, giving its container KERNEL_ID, RESPONSE_ADDRESS,
 * PUBLIC_KEY and PORT_RANGE as environment variables; Kubernetes puts those
 * into the container's args where they are written $(NAME). So for Kubernetes
 * the kernel's options go into the template, not into argv. */
#include "kernel/cmd/launcher_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/fsutil.h"
#include "protocol/errbuf.h"
#include "sandbox/tfile.h"

/* The gateway's options and its placeholders, in the order its own
 * kernelspecs give them. */
static const char *const gateway_args[][2] = {
    {"--RemoteProcessProxy.kernel-id", "{kernel_id}"},
    {"--RemoteProcessProxy.response-address", "{response_address}"},
    {"--RemoteProcessProxy.public-key", "{public_key}"},
    {"--RemoteProcessProxy.port-range", "{port_range}"},
};
/* The same in the pod, from the container's environment. */
static const char *const pod_env[] = {"$(KERNEL_ID)", "$(RESPONSE_ADDRESS)",
                                      "$(PUBLIC_KEY)", "$(PORT_RANGE)"};
#define NGATEWAY_ARGS (sizeof gateway_args / sizeof gateway_args[0])
#define LOCAL_HEAD    4 /* BINARY kernel -f {connection_file} */

static const char pod_head[] =
    "# The pod of a sandpit kernel, for Jupyter Enterprise Gateway's\n"
    "# launch_kubernetes.py: copy that file from the gateway's kernel launchers\n"
    "# (kernel-launchers/kubernetes/scripts/) into this folder. Written by\n"
    "# `sandpit install --enterprise-gateway kubernetes`; the kernel's options are\n"
    "# in the container's args. The launcher renders this with the KERNEL_*\n"
    "# variables in lower case, and gives the container KERNEL_ID,\n"
    "# RESPONSE_ADDRESS, PUBLIC_KEY and PORT_RANGE, which Kubernetes puts into\n"
    "# args where they are written $(NAME). Values are quoted with Jinja2's own\n"
    "# tojson (JSON is YAML), not the gateway's yaml_safe, which came with its\n"
    "# 3.3.0: so the template renders with the launchers of 3.2 and later.\n"
    "apiVersion: v1\n"
    "kind: Pod\n"
    "metadata:\n"
    "  name: {{ kernel_pod_name | tojson }}\n"
    "  namespace: {{ kernel_namespace | tojson }}\n"
    "  labels:\n"
    "    kernel_id: {{ kernel_id | tojson }}\n"
    "    app: enterprise-gateway\n"
    "    component: kernel\n"
    "spec:\n"
    "  restartPolicy: Never\n"
    "  serviceAccountName: {{ kernel_service_account_name | tojson }}\n"
    "  securityContext:\n"
    "    runAsNonRoot: true\n"
    "    {% if kernel_uid is defined %}\n"
    "    runAsUser: {{ kernel_uid | int }}\n"
    "    {% endif %}\n"
    "    {% if kernel_gid is defined %}\n"
    "    runAsGroup: {{ kernel_gid | int }}\n"
    "    {% endif %}\n"
    "    # The volumes' files belong to this group (the image's user's, 1000,\n"
    "    # unless KERNEL_GID says another), so that a volume made by root at\n"
    "    # /workspace is writable to the kernel.\n"
    "    fsGroup: {{ (kernel_gid if kernel_gid is defined else 1000) | int }}\n"
    "    # The worker makes user namespaces and installs its own seccomp filter\n"
    "    # under this one. profiles/sandpit.json is sandpit's profile for that:\n"
    "    # kernelspec/seccomp/sandpit.json in its source, and\n"
    "    # /usr/local/share/sandpit/seccomp/sandpit.json in its image. Every node\n"
    "    # that runs kernels needs it as\n"
    "    # /var/lib/kubelet/seccomp/profiles/sandpit.json, or the pod does not\n"
    "    # start; where the nodes cannot have it, write type: Unconfined instead\n"
    "    # (see sandpit's docs/scale.md).\n"
    "    seccompProfile:\n"
    "      type: Localhost\n"
    "      localhostProfile: profiles/sandpit.json\n"
    "  containers:\n"
    "  - name: {{ kernel_pod_name | tojson }}\n"
    "    image: {{ kernel_image | tojson }}\n";

static const char pod_tail[] =
    "    securityContext:\n"
    "      privileged: false\n"
    "      allowPrivilegeEscalation: false\n"
    "      capabilities:\n"
    "        drop: [ALL]\n"
    "    {% if kernel_working_dir %}\n"
    "    workingDir: {{ kernel_working_dir | tojson }}\n"
    "    {% endif %}\n"
    "    {% if kernel_cpus is defined or kernel_memory is defined or "
    "kernel_cpus_limit is defined or kernel_memory_limit is defined %}\n"
    "    resources:\n"
    "      {% if kernel_cpus is defined or kernel_memory is defined %}\n"
    "      requests:\n"
    "        {% if kernel_cpus is defined %}\n"
    "        cpu: {{ kernel_cpus | tojson }}\n"
    "        {% endif %}\n"
    "        {% if kernel_memory is defined %}\n"
    "        memory: {{ kernel_memory | tojson }}\n"
    "        {% endif %}\n"
    "      {% endif %}\n"
    "      {% if kernel_cpus_limit is defined or kernel_memory_limit is defined %}\n"
    "      limits:\n"
    "        {% if kernel_cpus_limit is defined %}\n"
    "        cpu: {{ kernel_cpus_limit | tojson }}\n"
    "        {% endif %}\n"
    "        {% if kernel_memory_limit is defined %}\n"
    "        memory: {{ kernel_memory_limit | tojson }}\n"
    "        {% endif %}\n"
    "      {% endif %}\n"
    "    {% endif %}\n"
    "    volumeMounts:\n"
    "    {% if kernel_volume_mounts %}\n"
    "      {% for volume_mount in kernel_volume_mounts %}\n"
    "    - {{ volume_mount | tojson }}\n"
    "      {% endfor %}\n"
    "    {% endif %}\n"
    "  volumes:\n"
    "  {% if kernel_volumes %}\n"
    "    {% for volume in kernel_volumes %}\n"
    "  - {{ volume | tojson }}\n"
    "    {% endfor %}\n"
    "  {% endif %}\n";

bool launcher_spec_known(const char *kind)
{
    return strcmp(kind, "distributed") == 0 || strcmp(kind, "kubernetes") == 0;
}

/* The container's command and args, as JSON arrays (which YAML reads as they
 * are), kept out of Jinja's reach: an option's value may hold "{{". */
static char *pod_command(const json_t *local_argv)
{
    json_t *cmd = json_pack("[s]", LAUNCHER_SPEC_POD_BINARY),
           *args = json_pack("[s]", "kernel");
    char *cmd_text = NULL, *args_text = NULL, *out = NULL;
    for (size_t i = 0; args && i < NGATEWAY_ARGS; i++) {
        json_array_append_new(args, json_string(gateway_args[i][0]));
        json_array_append_new(args, json_string(pod_env[i]));
    }
    for (size_t i = LOCAL_HEAD; args && i < json_array_size(local_argv); i++)
        json_array_append(args, json_array_get(local_argv, i));
    if (cmd && args && (cmd_text = json_dumps(cmd, JSON_COMPACT)) &&
        (args_text = json_dumps(args, JSON_COMPACT))) {
        size_t len = strlen(cmd_text) + strlen(args_text) + 128;
        if ((out = malloc(len)))
            snprintf(out, len,
                     "    {%% raw %%}\n"
                     "    command: %s\n"
                     "    args: %s\n"
                     "    {%% endraw %%}\n",
                     cmd_text, args_text);
    }
    json_decref(cmd);
    json_decref(args);
    free(cmd_text);
    free(args_text);
    return out;
}

static int write_pod_template(const char *dir, const json_t *local_argv, char *err,
                              size_t errlen)
{
    char scripts[PATH_MAX], path[PATH_MAX];
    if (snprintf(scripts, sizeof scripts, "%s/scripts", dir) >= (int)sizeof scripts ||
        snprintf(path, sizeof path, "%s/kernel-pod.yaml.j2", scripts) >= (int)sizeof path)
        return errbuf_set(-ENAMETOOLONG, err, errlen, "the path %s is too long", dir);
    char *command = pod_command(local_argv), *text = NULL;
    if (!command || asprintf(&text, "%s%s%s", pod_head, command, pod_tail) < 0) {
        free(command);
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    }
    free(command);
    int rc = fsutil_mkdir_p(scripts, 0755);
    if (!rc)
        rc = fsutil_write_file(path, text, strlen(text), 0644);
    free(text);
    if (rc)
        return errbuf_set(rc, err, errlen, "cannot write %s: %s", path,
                          tfile_strerror(rc));
    return 0;
}

int launcher_spec_apply(json_t *spec, const char *kind, const char *image,
                        const char *dir, char *err, size_t errlen)
{
    json_t *local = json_object_get(spec, "argv");
    json_t *meta = json_object_get(spec, "metadata");
    if (!json_is_array(local) || json_array_size(local) < LOCAL_HEAD ||
        !json_is_object(meta))
        return errbuf_set(-EINVAL, err, errlen, "not a kernelspec install made");
    bool k8s = strcmp(kind, "kubernetes") == 0;
    if (!k8s && strcmp(kind, "distributed") != 0)
        return errbuf_set(-EINVAL, err, errlen,
                          "--enterprise-gateway takes distributed or kubernetes, not "
                          "\"%s\"",
                          kind);
    if (image && !k8s)
        return errbuf_set(-EINVAL, err, errlen,
                          "--image is for --enterprise-gateway kubernetes only");
    json_t *argv = json_array();
    json_t *proxy =
        json_pack("{s:s}", "class_name",
                  k8s ? LAUNCHER_SPEC_KUBERNETES_CLASS : LAUNCHER_SPEC_DISTRIBUTED_CLASS);
    if (!argv || !proxy) {
        json_decref(argv);
        json_decref(proxy);
        return -ENOMEM;
    }
    if (k8s) {
        json_array_append_new(argv, json_string("python"));
        json_array_append_new(argv,
                              json_string("{resource_dir}/scripts/launch_kubernetes.py"));
        json_object_set_new(proxy, "config",
                            json_pack("{s:s}", "image_name",
                                      image ? image : LAUNCHER_SPEC_DEFAULT_IMAGE));
    } else {
        json_array_append(argv, json_array_get(local, 0)); /* the binary */
        json_array_append_new(argv, json_string("kernel"));
    }
    for (size_t i = 0; i < NGATEWAY_ARGS; i++) {
        json_array_append_new(argv, json_string(gateway_args[i][0]));
        json_array_append_new(argv, json_string(gateway_args[i][1]));
    }
    for (size_t i = LOCAL_HEAD; !k8s && i < json_array_size(local); i++)
        json_array_append(argv, json_array_get(local, i));
    int rc = k8s ? write_pod_template(dir, local, err, errlen) : 0;
    if (rc) {
        json_decref(argv);
        json_decref(proxy);
        return rc;
    }
    json_object_set_new(meta, "process_proxy", proxy);
    json_object_set_new(spec, "argv", argv);
    return 0;
}
