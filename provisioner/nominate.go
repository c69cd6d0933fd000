package provisioner

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// nominate tells the scheduler where each planned pod is expected to land (KEP-5278,
// NominatedNodeNameForExpectation): once a launched node exists, every still-pending pod planned
// onto it gets status.nominatedNodeName set to it, and the annotation tiler.dev/nominated-by so
// that Tiler never mistakes its own nomination for the scheduler's preemption nomination (which it
// never overwrites). A nomination that points at a node that is gone is cleared.
func (c *Controller) nominate(ctx context.Context, log *zap.Logger, recs []LaunchRecord, nodes []*corev1.Node, pods []*corev1.Pod) {
	if !c.cfg.Nominate {
		return
	}
	exists := map[string]bool{}
	for _, n := range nodes {
		exists[n.Name] = true
	}
	planned := map[string]string{}
	for _, r := range recs {
		if exists[r.NodeName] {
			for _, p := range r.Pods {
				planned[p] = r.NodeName
			}
		}
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			continue
		}
		key := p.Namespace + "/" + p.Name
		ours := p.Annotations[AnnotationNominatedBy] == "tiler"
		want, ok := planned[key]
		switch {
		case ok && p.Status.NominatedNodeName == "" || ok && ours && p.Status.NominatedNodeName != want:
			c.setNomination(ctx, log, p, want)
		case ours && p.Status.NominatedNodeName != "" && !exists[p.Status.NominatedNodeName]:
			c.setNomination(ctx, log, p, "")
		}
	}
}

func (c *Controller) setNomination(ctx context.Context, log *zap.Logger, p *corev1.Pod, node string) {
	meta, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{AnnotationNominatedBy: "tiler"}}})
	if _, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, meta, metav1.PatchOptions{}); err != nil {
		log.Debug("annotating nomination", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
		return
	}
	var nn any = node
	if node == "" {
		nn = nil
	}
	status, _ := json.Marshal(map[string]any{"status": map[string]any{"nominatedNodeName": nn}})
	if _, err := c.kube.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
		log.Debug("setting nominatedNodeName", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
	}
}
