package protocol

// PoolParams ask for a warm pool (§4.2): Size sandboxes of the create's spec
// and tags kept ready for this install; a member left unclaimed for
// MaxIdleS seconds is removed (0: DefaultPoolMaxIdleS).
type PoolParams struct {
	Size     int   `json:"size"`
	MaxIdleS int64 `json:"max_idle_s,omitempty"`
}

// Pool bounds, fixed (not announced in limits: they are part of the method).
const (
	MaxPoolSize         = 32
	DefaultPoolMaxIdleS = 600
	MaxPoolMaxIdleS     = 86400
)
