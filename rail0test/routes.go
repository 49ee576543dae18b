package rail0test

import "net/http"

// Route patterns of the payment write operations, as Ledger and Fault name them.
const (
	routeCreatePayment    = "POST /payments"
	routePrepare          = "POST /payments/{id}/{operation}/prepare"
	routeSubmit           = "POST /payments/{id}/{operation}"
	routeSubmitted        = "POST /payments/{id}/{operation}/submitted"
	routeDisputePrepare   = "POST /payments/{id}/dispute/prepare"
	routeDisputeSubmit    = "POST /payments/{id}/dispute"
	routeDisputeSubmitted = "POST /payments/{id}/dispute/submitted"
	routeClosePrepare     = "POST /payments/{id}/dispute/close/prepare"
	routeCloseSubmit      = "POST /payments/{id}/dispute/close"
	routeCloseSubmitted   = "POST /payments/{id}/dispute/close/submitted"
)

func (s *Server) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("GET /{$}", s.handleRoot)
	m.HandleFunc("GET /openapi.json", s.handleOpenAPI)
	m.HandleFunc("GET /health", s.handleHealth)

	m.HandleFunc("POST /auth/nonces", s.handleNonce)
	m.HandleFunc("POST /auth", s.handleVerify)
	m.HandleFunc("POST /auth/logout", s.authed(s.handleLogout))

	m.HandleFunc("GET /blockchains", s.handleBlockchains)
	m.HandleFunc("GET /tokens", s.handleTokens)
	m.HandleFunc("GET /payment_methods", s.handlePaymentMethods)

	const wallets = "/accounts/{account_id}/wallets"
	m.HandleFunc("GET "+wallets, s.authed(s.handleListWallets))
	m.HandleFunc("POST "+wallets, s.authed(s.handleCreateWallet))
	m.HandleFunc("GET "+wallets+"/{id}", s.authed(s.handleGetWallet))
	m.HandleFunc("PATCH "+wallets+"/{id}", s.authed(s.handleUpdateWallet))
	m.HandleFunc("DELETE "+wallets+"/{id}", s.authed(s.handleDeactivateWallet))
	m.HandleFunc("GET "+wallets+"/{id}/balances", s.authed(s.handleBalances))
	m.HandleFunc("POST "+wallets+"/{id}/tokens", s.authed(s.handleAddWalletToken))
	m.HandleFunc("DELETE "+wallets+"/{id}/tokens/{token_id}", s.authed(s.handleDeleteWalletToken))
	m.HandleFunc("PATCH "+wallets+"/{id}/tokens/{token_id}/enable", s.authed(s.handleToggleWalletToken(true)))
	m.HandleFunc("PATCH "+wallets+"/{id}/tokens/{token_id}/disable", s.authed(s.handleToggleWalletToken(false)))

	m.HandleFunc("GET /disputes", s.authed(s.handleAccountDisputes))

	m.HandleFunc("GET /payments", s.authed(s.handleListPayments))
	m.HandleFunc(routeCreatePayment, s.authed(s.handleCreatePayment))
	m.HandleFunc("GET /payments/{id}", s.authed(s.handleGetPayment))
	m.HandleFunc("PUT /payments/{id}/sign", s.authed(s.handleSign))
	m.HandleFunc("GET /payments/{id}/transactions", s.authed(s.handleListTransactions))
	m.HandleFunc("GET /payments/{id}/disputes", s.authed(s.handlePaymentDisputes))
	m.HandleFunc(routePrepare, s.authed(s.handlePrepare))
	m.HandleFunc(routeSubmit, s.authed(s.handleSubmit))
	m.HandleFunc(routeSubmitted, s.authed(s.handleSubmitted))
	m.HandleFunc(routeDisputePrepare, s.authed(s.handleDisputePrepare(opDispute)))
	m.HandleFunc(routeDisputeSubmit, s.authed(s.handleDisputeSubmit(opDispute)))
	m.HandleFunc(routeDisputeSubmitted, s.authed(s.handleDisputeSubmitted(opDispute)))
	m.HandleFunc(routeClosePrepare, s.authed(s.handleDisputePrepare(opCloseDispute)))
	m.HandleFunc(routeCloseSubmit, s.authed(s.handleDisputeSubmit(opCloseDispute)))
	m.HandleFunc(routeCloseSubmitted, s.authed(s.handleDisputeSubmitted(opCloseDispute)))

	m.HandleFunc("GET /analytics/summary", s.withAccount(s.handleSummary))
	m.HandleFunc("GET /analytics/timeseries", s.withAccount(s.handleTimeseries))
	m.HandleFunc("GET /analytics/breakdown", s.withAccount(s.handleBreakdown))

	m.HandleFunc("GET /webhooks", s.withAccount(s.handleListWebhooks))
	m.HandleFunc("POST /webhooks", s.withAccount(s.handleCreateWebhook))
	m.HandleFunc("GET /webhooks/{id}", s.withAccount(s.handleGetWebhook))
	m.HandleFunc("PATCH /webhooks/{id}", s.withAccount(s.handleUpdateWebhook))
	m.HandleFunc("DELETE /webhooks/{id}", s.withAccount(s.handleDeleteWebhook))
	m.HandleFunc("PUT /webhooks/{id}/enable", s.withAccount(s.handleWebhookSwitch("enable")))
	m.HandleFunc("PUT /webhooks/{id}/disable", s.withAccount(s.handleWebhookSwitch("disable")))
	m.HandleFunc("PUT /webhooks/{id}/rotate_secret", s.withAccount(s.handleWebhookSwitch("rotate_secret")))
	m.HandleFunc("PUT /webhooks/{id}/reset_circuit", s.withAccount(s.handleWebhookSwitch("reset_circuit")))
	m.HandleFunc("GET /webhooks/{id}/event_callbacks", s.withAccount(s.handleEventCallbacks))
	m.HandleFunc("POST /webhooks/{id}/event_callbacks/{callback_id}/redeliver", s.withAccount(s.handleRedeliver))

	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{status: http.StatusNotFound, code: "not_found", title: "Not found",
			detail: "No route matches " + r.Method + " " + r.URL.Path + "."})
	})
	return m
}
