package aws

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tiler-dev/tiler/api"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// codeTemplateNotFound are EC2's error codes for a launch template that does not exist.
var codeTemplateNotFound = map[string]bool{
	"InvalidLaunchTemplateId.NotFound":            true,
	"InvalidLaunchTemplateName.NotFoundException": true,
}

// CollectGarbage implements cloudprovider.GarbageCollector: it deletes the managed launch
// templates of this cluster (tagged tiler.dev/cluster with its name and carrying
// tiler.dev/bootstrap-hash) that were created more than Config.TemplateRetention ago and that no
// launch of this provider needed within it. Every pool and bootstrap change leaves a template
// behind (tiler-<pool>-<hash>), and EC2 allows 5,000 per region. A deleted template that a
// later launch needs is created again (it is named by its content). Running instances do not
// need their template. Nothing is deleted until a retention has passed since the first call:
// until then this provider has not seen what the launches use (a standby that just took the
// lead has launched nothing). Templates of your own (LaunchTemplateID/Name) are never touched;
// without Bootstrap this does nothing.
func (p *Provider) CollectGarbage(ctx context.Context) ([]string, error) {
	retention := p.cfg.templateRetention()
	now := p.clock.Now()
	p.tmplMu.Lock()
	if p.gcSince.IsZero() {
		p.gcSince = now
	}
	since := p.gcSince
	p.tmplMu.Unlock()
	if p.cfg.Bootstrap == nil || now.Sub(since) < retention {
		return nil, nil
	}
	candidates, err := p.managedTemplates(ctx)
	if err != nil {
		return nil, err
	}
	p.gcMu.Lock() // no launch is between ensuring a template and CreateFleet
	defer p.gcMu.Unlock()
	var deleted []string
	var errs []error
	for _, lt := range candidates {
		name := awssdk.ToString(lt.LaunchTemplateName)
		p.tmplMu.Lock()
		last, used := p.used[name]
		p.tmplMu.Unlock()
		if lt.CreateTime == nil || now.Sub(*lt.CreateTime) < retention || (used && now.Sub(last) < retention) {
			continue
		}
		_, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: lt.LaunchTemplateId})
		var ae smithy.APIError
		if err != nil && !(errors.As(err, &ae) && codeTemplateNotFound[ae.ErrorCode()]) {
			errs = append(errs, fmt.Errorf("deleting launch template %s: %w", name, err))
			continue
		}
		p.tmplMu.Lock()
		delete(p.templates, name)
		delete(p.used, name)
		p.tmplMu.Unlock()
		deleted = append(deleted, name)
	}
	sort.Strings(deleted)
	return deleted, errors.Join(errs...)
}

// managedTemplates lists the launch templates tagged with this cluster that carry a bootstrap
// hash, following the pages.
func (p *Provider) managedTemplates(ctx context.Context) ([]ec2types.LaunchTemplate, error) {
	pages := ec2.NewDescribeLaunchTemplatesPaginator(p.ec2, &ec2.DescribeLaunchTemplatesInput{Filters: []ec2types.Filter{
		{Name: awssdk.String("tag:" + api.TagCluster), Values: []string{p.cfg.ClusterName}},
		{Name: awssdk.String("tag-key"), Values: []string{api.TagBootstrapHash}},
	}})
	var out []ec2types.LaunchTemplate
	for page := 1; pages.HasMorePages(); page++ {
		if page > maxPages {
			return nil, fmt.Errorf("listing the managed launch templates: more than %d pages", maxPages)
		}
		resp, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the managed launch templates: %w", err)
		}
		out = append(out, resp.LaunchTemplates...)
	}
	return out, nil
}
