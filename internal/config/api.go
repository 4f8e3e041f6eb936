package config

// APIOptions are the Corefile's api_* options: the admin API and dashboard.
type APIOptions struct {
	// Enable turns the admin API on (api_enable).
	Enable bool
}
