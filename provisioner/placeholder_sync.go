package provisioner

import (
	"context"

	"github.com/tiler-dev/tiler/api"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Placeholder pods (built by the pre-scaler: provisioner/prescale/placeholders.go) hold the room
// bought for a forecast's expected pods with real pods of the lowest priority. The controller
// leaves them out of every batch (splitPlaceholders) and creates and deletes them to match what
// its PlaceholderSource wants.

// PlaceholderSource is implemented by a Prescaler that asks for placeholder pods (the forecast
// pre-scaler, prescale.ForecastPrescaler, does). The controller creates and deletes pods in its
// namespace to match.
type PlaceholderSource interface {
	// Placeholders returns the PriorityClass placeholders use and the placeholder pods the last
	// ExpectedPods call wants, by name.
	Placeholders() (*schedulingv1.PriorityClass, []*corev1.Pod)
}

// isPlaceholder reports whether p is a placeholder pod.
func isPlaceholder(p *corev1.Pod) bool {
	_, ok := p.Labels[api.LabelPlaceholder]
	return ok
}

// splitPlaceholders separates the placeholder pods from the others.
func splitPlaceholders(all []*corev1.Pod) (pods, placeholders []*corev1.Pod) {
	for _, p := range all {
		if isPlaceholder(p) {
			placeholders = append(placeholders, p)
		} else {
			pods = append(pods, p)
		}
	}
	return pods, placeholders
}

// syncPlaceholders deletes and creates the placeholder pods a batch decided on
// (Decision.Placeholders), creating their PriorityClass first when it is missing. Errors are
// logged; the next batch decides again.
func (c *Controller) syncPlaceholders(ctx context.Context, log *zap.Logger, ch PlaceholderChanges) {
	for _, p := range ch.Delete {
		err := c.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		if err != nil && !apierrors.IsNotFound(err) {
			log.Warn("deleting a placeholder pod", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
			continue
		}
		c.metrics.Placeholders.WithLabelValues("deleted").Inc()
	}
	if len(ch.Create) == 0 {
		return
	}
	if err := c.ensurePriorityClass(ctx, ch.Class); err != nil {
		level := zap.WarnLevel
		if err.Error() == c.placeholderErr {
			level = zap.DebugLevel // said already; it is retried every batch
		}
		c.placeholderErr = err.Error()
		log.Log(level, "no placeholder pods: their PriorityClass is missing and could not be created", zap.String(keyPriorityClass, ch.Class.Name), zap.Error(err))
		return
	}
	c.placeholderErr = ""
	for _, p := range ch.Create {
		_, err := c.kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
		case err != nil:
			log.Warn("creating a placeholder pod", zap.String(keyPod, p.Namespace+"/"+p.Name), zap.Error(err))
		default:
			c.metrics.Placeholders.WithLabelValues("created").Inc()
		}
	}
}

// ensurePriorityClass creates class unless a PriorityClass of its name exists (an operator's own,
// with whatever value, is kept).
func (c *Controller) ensurePriorityClass(ctx context.Context, class *schedulingv1.PriorityClass) error {
	if class == nil {
		return nil // the source names none: the placeholders' own class must exist
	}
	if _, err := c.factory.Scheduling().V1().PriorityClasses().Lister().Get(class.Name); err == nil {
		return nil
	}
	_, err := c.kube.SchedulingV1().PriorityClasses().Create(ctx, class, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}
