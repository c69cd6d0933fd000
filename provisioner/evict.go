package provisioner

import policyv1 "k8s.io/api/policy/v1"

type policyv1Eviction = policyv1.Eviction
