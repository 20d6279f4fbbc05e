namespace Pricing.Api.Tenancy;

public sealed class TenantContextMiddleware(RequestDelegate next, TenantDirectoryClient directory)
{
    public Task Invoke(HttpContext context)
    {
        var key = context.Request.Headers["X-Tenant-Key"].ToString();
        if (!string.IsNullOrEmpty(key))
        {
            // The tenant drives currency and rounding rules for every price in the request.
            context.Items[TenantContext.ItemKey] = directory.Resolve(key);
        }
        return next(context);
    }
}

public sealed class TenantDirectoryClient(HttpClient http)
{
    public TenantContext Resolve(string key)
    {
        var response = http.GetAsync($"/v1/tenants/{Uri.EscapeDataString(key)}").GetAwaiter().GetResult();
        response.EnsureSuccessStatusCode();
        return response.Content.ReadFromJsonAsync<TenantContext>().GetAwaiter().GetResult()!;
    }
}
