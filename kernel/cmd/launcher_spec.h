/* launcher_spec: what `sandpit install --enterprise-gateway KIND` writes, a
 * kernelspec for one of Jupyter Enterprise Gateway's process proxies. It turns
 * the local kernelspec that install built into the gateway's: its class in
 * metadata.process_proxy, the gateway's placeholders in argv, and for
 * Kubernetes the image in metadata.process_proxy.config and the pod's template
 * beside kernel.json. The spec is borrowed and changed in place. */
#ifndef SANDPIT_LAUNCHER_SPEC_H
#define SANDPIT_LAUNCHER_SPEC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define LAUNCHER_SPEC_DISTRIBUTED_CLASS                                                  \
    "enterprise_gateway.services.processproxies.distributed.DistributedProcessProxy"
#define LAUNCHER_SPEC_KUBERNETES_CLASS                                                   \
    "enterprise_gateway.services.processproxies.k8s.KubernetesProcessProxy"
/* The image a Kubernetes kernelspec names when --image is not given: what the
 * Containerfile's own build command tags. */
#define LAUNCHER_SPEC_DEFAULT_IMAGE "sandpit:latest"
/* Where the Containerfile puts the binary, as the pod's command. */
#define LAUNCHER_SPEC_POD_BINARY "/usr/local/bin/sandpit"

/* True when kind is one this module writes ("distributed", "kubernetes"). */
bool launcher_spec_known(const char *kind);

/* Rewrites spec, a local kernelspec whose argv is [BINARY, "kernel", "-f",
 * "{connection_file}", kernel options...], for the gateway's process proxy of
 * kind; image (NULL: the default) is for Kubernetes only. For Kubernetes it also
 * writes dir/scripts/kernel-pod.yaml.j2, with the kernel options in the pod's
 * command line. 0, or -errno with a sentence in err. */
int launcher_spec_apply(json_t *spec, const char *kind, const char *image,
                        const char *dir, char *err, size_t errlen);

#endif
