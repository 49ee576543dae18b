# The bench's outside throttle: Rack::Attack itself (6.x, the gateway's
# throttle) in front of an app that answers GET /blockchains, served by Puma
# on a loopback port, as a Rails application behind Rack::Attack usually
# is. Nothing here is rail0test's: the windows, the counting and the 429 are
# Rack::Attack's own code (key "<name>:<window>:<ip>" with window =
# Time.now.to_i / period, every request counted, refused when the count
# exceeds the limit). Only the response is configured, to say Retry-After =
# the whole period, as the RAIL0 gateway does (Rack::Attack's own optional
# header says the time left).
#
# Usage: ruby rackattack.rb LIMIT PERIOD_SECONDS
# Prints the server's URL on one line, then serves until stdin closes.
# Debian packages: ruby-rack-attack, puma.

require 'json'
require 'rack'
require 'rack/attack'
require 'stringio'
require 'puma'
require 'puma/server'

limit = Integer(ARGV.fetch(0))
period = Integer(ARGV.fetch(1))

# CountStore is the smallest cache Rack::Attack accepts: a counter per key,
# safe across Puma's threads. Past 64 keys, all but the one being counted
# are dropped: the bench has one client address, so they are the windows
# gone by.
class CountStore
  def initialize
    @lock = Mutex.new
    @counts = {}
  end

  def increment(key, amount, _options = {})
    @lock.synchronize do
      @counts.delete_if { |k, _| k != key } if @counts.size > 64
      @counts[key] = (@counts[key] || 0) + amount
    end
  end

  def write(key, value, _options = {})
    @lock.synchronize { @counts[key] = value }
  end

  def read(key)
    @lock.synchronize { @counts[key] }
  end

  def delete(key)
    @lock.synchronize { @counts.delete(key) }
  end
end

Rack::Attack.cache.store = CountStore.new
Rack::Attack.throttle('public', limit: limit, period: period, &:ip)
Rack::Attack.throttled_responder = lambda do |request|
  data = request.env['rack.attack.match_data']
  body = { code: 'rate_limited', title: 'Too Many Requests',
           detail: 'Request limit reached for this period; retry after the Retry-After delay.',
           status: 'rate_limited' }
  [429, { 'content-type' => 'application/json', 'retry-after' => data[:period].to_s }, [JSON.generate(body)]]
end

app = Rack::Builder.new do
  use Rack::Attack
  run lambda { |_env| [200, { 'content-type' => 'application/json' }, ['[]']] }
end

quiet = Puma::Events.new(StringIO.new, StringIO.new)
server = Puma::Server.new(app, quiet, min_threads: 16, max_threads: 1024)
port = server.add_tcp_listener('127.0.0.1', 0).addr[1]
server.run
puts "http://127.0.0.1:#{port}"
$stdout.flush
$stdin.read
server.stop(true)
