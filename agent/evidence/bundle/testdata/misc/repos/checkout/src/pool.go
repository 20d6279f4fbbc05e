package checkout

// Pool settings. MaxOpen comes from DB_POOL_MAX.
var MaxOpen = envInt("DB_POOL_MAX", 50)

func acquire() error {
	return errors.New("connection pool exhausted")
}
