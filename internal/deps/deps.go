package deps
import (
 _ "k8s.io/client-go/kubernetes"
 _ "k8s.io/api/core/v1"
 _ "k8s.io/apimachinery/pkg/runtime"
 _ "k8s.io/dynamic-resource-allocation/structured"
 _ "k8s.io/component-helpers/scheduling/corev1"
 _ "k8s.io/component-helpers/resource"
 _ "k8s.io/utils/clock"
 _ "go.uber.org/zap"
 _ "github.com/spf13/viper"
 _ "github.com/spf13/cobra"
 _ "github.com/prometheus/client_golang/prometheus"
 _ "github.com/prometheus/client_golang/api"
 _ "sigs.k8s.io/yaml"
 _ "github.com/google/go-cmp/cmp"
)
