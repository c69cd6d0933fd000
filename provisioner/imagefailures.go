package provisioner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Failed images: a roll onto a new image pauses while a node booted from it shows a health
// signal (simulator.DisruptionOptions.Images). Two failures leave no such node to show it: a
// launch from the image that never registers (an image that does not boot), removed at the
// registration timeout; and a young node that fell sick and was repaired, whose replacement,
// healthy for its first minutes, would let the roll take one more node. The controller
// remembers both for Config.ImageProbation, in the ConfigMap FailedImagesConfigMap of its
// namespace so that a restart or a new leader keeps the roll paused, and gives them to each
// disruption plan (DisruptionOptions.FailedImages). A roll onto a remembered image resumes when
// the memory ends (one more canary), when the image changes, or when an operator deletes the
// entry (or the ConfigMap).

// FailedImagesConfigMap is the ConfigMap, in Config.Namespace, that keeps the failed images.
const FailedImagesConfigMap = "tiler-failed-images"

// failedImagesKey is the ConfigMap's key: a JSON list of FailedImage.
const failedImagesKey = "failures.json"

// FailedImage is an image that failed, remembered until At + Config.ImageProbation.
type FailedImage struct {
	Image string `json:"image"`
	// Node is the node it failed on (the Node of a launch that never registered may not exist).
	Node string `json:"node"`
	// Why says how it failed.
	Why string    `json:"why"`
	At  time.Time `json:"at"`
}

// imageMemory holds the failures not written yet (the ConfigMap could not be read or written);
// the ConfigMap itself is read at each use, so that an operator's edit counts at once.
type imageMemory struct {
	mu      sync.Mutex
	pending map[string]FailedImage
}

// failedImages returns the images remembered as failed at now, with why (for
// DisruptionOptions.FailedImages). It fails when the ConfigMap cannot be read: a plan made
// without the memory could roll onto a failed image.
func (c *Controller) failedImages(ctx context.Context, now time.Time) (map[string]string, error) {
	remembered, err := c.syncImageMemory(ctx, now, nil)
	if err != nil {
		return nil, err
	}
	if len(remembered) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(remembered))
	for img, f := range remembered {
		out[img] = fmt.Sprintf("%s (at %s; remembered until %s)", f.Why, f.At.UTC().Format(time.RFC3339),
			f.At.Add(c.cfg.ImageProbation).UTC().Format(time.RFC3339))
	}
	return out, nil
}

// rememberImageFailures records the failures (per image the latest, unless on the node already
// remembered) and tells the nodes they failed on (ImageFailed) when the image was not remembered
// already. Nothing is remembered with
// a zero probation.
func (c *Controller) rememberImageFailures(ctx context.Context, now time.Time, fs []FailedImage) {
	if len(fs) == 0 || c.cfg.ImageProbation <= 0 {
		return
	}
	if _, err := c.syncImageMemory(ctx, now, fs); err != nil {
		c.log.Warn("the failed images are kept in memory until their ConfigMap can be read", zap.Error(err))
	}
}

// syncImageMemory reads the ConfigMap, adds the pending failures and fs to it, forgets those
// older than the probation, writes it back when that changed it, and returns what it holds. What
// cannot be written stays pending, for the next call.
func (c *Controller) syncImageMemory(ctx context.Context, now time.Time, fs []FailedImage) (map[string]FailedImage, error) {
	m := &c.imageMemory
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending == nil {
		m.pending = map[string]FailedImage{}
	}
	stored, cm, readErr := c.readFailedImages(ctx)
	for _, f := range fs {
		prev, known := m.pending[f.Image]
		if !known {
			prev, known = stored[f.Image]
		}
		if known && (!f.At.After(prev.At) || f.Node == prev.Node) {
			// (A node that stays sick is reported by every plan: the memory runs from the first
			// report. Its replacement failing again renews it.)
			continue
		}
		if !known {
			c.recorder.Eventf(nodeRef(f.Node), corev1.EventTypeWarning, "ImageFailed",
				"image %s failed: %s; rolls onto it are paused until %s", f.Image, f.Why, f.At.Add(c.cfg.ImageProbation).UTC().Format(time.RFC3339))
			c.log.Warn("image failed: rolls onto it are paused", zap.String(keyImage, f.Image), zap.String(keyNode, f.Node),
				zap.String("why", f.Why), zap.Duration("for", c.cfg.ImageProbation))
		}
		m.pending[f.Image] = f
	}
	if readErr != nil {
		return nil, readErr
	}
	merged := maps.Clone(stored)
	if merged == nil {
		merged = map[string]FailedImage{}
	}
	changed := false
	for img, f := range m.pending {
		if prev, ok := merged[img]; !ok || f.At.After(prev.At) {
			merged[img], changed = f, true
		}
	}
	for img, f := range merged {
		if !now.Before(f.At.Add(c.cfg.ImageProbation)) {
			c.log.Info("failed image forgotten: rolls onto it may resume", zap.String(keyImage, img), zap.Time("failedAt", f.At))
			delete(merged, img)
			changed = true
		}
	}
	c.metrics.FailedImages.Set(float64(len(merged)))
	if !changed {
		return merged, nil
	}
	if err := c.writeFailedImages(ctx, cm, merged); err != nil {
		c.log.Warn("writing the failed images; retried at the next pass", zap.String(keyConfigMap, FailedImagesConfigMap), zap.Error(err))
		return merged, nil
	}
	clear(m.pending)
	return merged, nil
}

// readFailedImages reads the ConfigMap (nil when there is none). A value that does not parse is
// reported and read as empty: it is replaced at the next change.
func (c *Controller) readFailedImages(ctx context.Context) (map[string]FailedImage, *corev1.ConfigMap, error) {
	cm, err := c.kube.CoreV1().ConfigMaps(c.cfg.Namespace).Get(ctx, FailedImagesConfigMap, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil, nil
	case err != nil:
		return nil, nil, fmt.Errorf("reading ConfigMap %s/%s: %w", c.cfg.Namespace, FailedImagesConfigMap, err)
	}
	var fs []FailedImage
	if v, ok := cm.Data[failedImagesKey]; ok {
		if err := json.Unmarshal([]byte(v), &fs); err != nil {
			c.log.Error("ConfigMap "+c.cfg.Namespace+"/"+FailedImagesConfigMap+": key "+failedImagesKey+
				" is not a JSON list of failed images; read as empty, and replaced at the next failure", zap.Error(err))
			return nil, cm, nil
		}
	}
	out := map[string]FailedImage{}
	for _, f := range fs {
		if prev, ok := out[f.Image]; f.Image != "" && (!ok || f.At.After(prev.At)) {
			out[f.Image] = f
		}
	}
	return out, cm, nil
}

// writeFailedImages writes the failed images into the ConfigMap cm read (creating it when nil).
func (c *Controller) writeFailedImages(ctx context.Context, cm *corev1.ConfigMap, byImage map[string]FailedImage) error {
	fs := make([]FailedImage, 0, len(byImage))
	for _, img := range slices.Sorted(maps.Keys(byImage)) {
		fs = append(fs, byImage[img])
	}
	b, err := json.MarshalIndent(fs, "", "  ")
	if err != nil {
		return err
	}
	return c.putConfigMap(ctx, cm, FailedImagesConfigMap, failedImagesKey, string(b))
}

// putConfigMap sets the data of the controller's ConfigMap name to the one key: it creates the
// ConfigMap when cm (as read) is nil, and updates a copy of cm otherwise.
func (c *Controller) putConfigMap(ctx context.Context, cm *corev1.ConfigMap, name, key, value string) error {
	cms := c.kube.CoreV1().ConfigMaps(c.cfg.Namespace)
	if cm == nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.cfg.Namespace}}
		cm.Data = map[string]string{key: value}
		_, err := cms.Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	cm = cm.DeepCopy()
	cm.Data = map[string]string{key: value}
	_, err := cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
