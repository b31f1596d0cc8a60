package kubernetes

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The store is PersistentVolumeClaims. A claim the provider made for a
// volume is named after the volume's hash (volume names allow upper case,
// claim names do not) and carries the volume's name in an annotation, the
// owner tag as a label. A claim the provider did not make is a volume by
// its own name, visible only by an operator's grant (--allow-volume).
const (
	AnnotationVolumeName = provider.Namespace + "volume-name"
	claimPrefix          = "resident-vol-"
	// defaultClaimSize is what a claim made for spec.volumes asks for, from
	// the namespace's default storage class.
	defaultClaimSize = "1Gi"
)

func claimName(volume string) string {
	sum := sha256.Sum256([]byte(volume))
	return claimPrefix + hex.EncodeToString(sum[:12])
}

// volumeRef is a volume found for an owner: its claim and how it may use it.
type volumeRef struct {
	claim  string
	access provider.VolumeAccess
}

// lookupVolume finds the claim behind a volume name, as owner sees it: a
// claim it cannot see reads as missing (found=false).
func (p *Provider) lookupVolume(ctx context.Context, owner provider.Owner, name string) (ref volumeRef, found bool, err error) {
	cs, _ := p.client()
	claims := cs.CoreV1().PersistentVolumeClaims(p.namespace)
	c, err := claims.Get(ctx, claimName(name), metav1.GetOptions{})
	switch {
	case err == nil && isManaged(c.Labels, RoleStore) && c.Annotations[AnnotationVolumeName] == name && c.DeletionTimestamp == nil:
		access := provider.AccessTo(owner, name, c.Labels, p.grants)
		return volumeRef{claim: c.Name, access: access}, access != provider.VolumeHidden, nil
	case err != nil && !apierrors.IsNotFound(err):
		return ref, false, classify(ctx, "claim get", err)
	}
	if len(validation.IsDNS1123Subdomain(name)) > 0 {
		return ref, false, nil
	}
	c, err = claims.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return ref, false, nil
	case err != nil:
		return ref, false, classify(ctx, "claim get", err)
	case isManaged(c.Labels, RoleStore) || c.DeletionTimestamp != nil:
		return ref, false, nil // ours under another name: never by this one
	}
	access := provider.AccessTo(owner, name, c.Labels, p.grants)
	return volumeRef{claim: c.Name, access: access}, access != provider.VolumeHidden, nil
}

// claimsFor resolves spec.volumes to claims, making (labelled with the
// owner tag) those that do not exist yet; another install's, or one not
// made by the provider and not granted, is not_found; a read-only grant
// mounted writable is refused.
func (p *Provider) claimsFor(ctx context.Context, owner provider.Owner, mounts []protocol.VolumeMount) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range mounts {
		ref, found, err := p.lookupVolume(ctx, owner, m.Name)
		if err != nil {
			return nil, err
		}
		if !found {
			if exists, err := p.claimExists(ctx, m.Name); err != nil || exists {
				if err == nil {
					err = provider.VolumeNotFound(m.Name)
				}
				return nil, err
			}
			if ref.claim, err = p.createClaim(ctx, owner, m.Name); err != nil {
				return nil, err
			}
			ref.access = provider.VolumeReadWrite
		}
		if ref.access == provider.VolumeReadOnly && !m.ReadOnly {
			return nil, provider.ReadOnlyGrant(m.Name)
		}
		out[m.Name] = ref.claim
	}
	return out, nil
}

// claimExists: a claim of that volume exists that owner may not see.
func (p *Provider) claimExists(ctx context.Context, name string) (bool, error) {
	cs, _ := p.client()
	for _, n := range []string{claimName(name), name} {
		if n == name && len(validation.IsDNS1123Subdomain(name)) > 0 {
			continue
		}
		_, err := cs.CoreV1().PersistentVolumeClaims(p.namespace).Get(ctx, n, metav1.GetOptions{})
		if err == nil {
			return true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, classify(ctx, "claim get", err)
		}
	}
	return false, nil
}

func (p *Provider) createClaim(ctx context.Context, owner provider.Owner, name string) (string, error) {
	labels := baseLabels(RoleStore)
	labels[owner.Key] = owner.InstallID
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: claimName(name), Namespace: p.namespace, Labels: labels, Annotations: map[string]string{AnnotationVolumeName: name}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(defaultClaimSize)}},
		},
	}
	cs, _ := p.client()
	if _, err := cs.CoreV1().PersistentVolumeClaims(p.namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return "", provider.VolumeNotFound(name) // made at the same moment by another install, or ours being deleted
		}
		return "", classify(ctx, "claim create", err)
	}
	return claim.Name, nil
}

// ListVolumes lists owner's store claims and the granted foreign ones.
func (p *Provider) ListVolumes(ctx context.Context, owner provider.Owner) ([]protocol.Volume, error) {
	if err := validateOwner(owner); err != nil {
		return nil, err
	}
	ctx, cancel := p.callCtx(ctx)
	defer cancel()
	cs, _ := p.client()
	list, err := cs.CoreV1().PersistentVolumeClaims(p.namespace).List(ctx, metav1.ListOptions{LabelSelector: roleSelector(RoleStore) + "," + owner.Key + "=" + owner.InstallID})
	if err != nil {
		return nil, classify(ctx, "claim list", err)
	}
	out := []protocol.Volume{}
	for _, c := range list.Items {
		name := c.Annotations[AnnotationVolumeName]
		if c.DeletionTimestamp == nil && c.Name == claimName(name) && owner.Owns(c.Labels) {
			out = append(out, protocol.Volume{Name: name, CreatedAt: c.CreationTimestamp.UTC()})
		}
	}
	for _, g := range p.grants {
		ref, found, err := p.lookupVolume(ctx, owner, g.Name)
		if err != nil {
			return nil, err
		}
		if found && !slices.ContainsFunc(out, func(v protocol.Volume) bool { return v.Name == g.Name }) {
			c, err := cs.CoreV1().PersistentVolumeClaims(p.namespace).Get(ctx, ref.claim, metav1.GetOptions{})
			if err == nil {
				out = append(out, protocol.Volume{Name: g.Name, CreatedAt: c.CreationTimestamp.UTC()})
			}
		}
	}
	slices.SortFunc(out, func(a, b protocol.Volume) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}
