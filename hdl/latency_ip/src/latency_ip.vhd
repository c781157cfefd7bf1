-- irqlab Latencies IP (VHDL-2008).
--
-- Measures the time, in clock cycles, from a rising edge of irq_in to the
-- next rising edge of ack_in (LATENCY-IP Eq. 2), stores every measurement in
-- a sample RAM (LATENCY-IP Table 2: 512 x 16 by default) and keeps the
-- running statistics last / max / min / num plus a sticky alarm against
-- alarm_lat (LATENCY-IP Section 4, Table 2). Two AXI4-Lite slaves give the
-- processor access: s00 reads the sample RAM, s01 holds the control and
-- statistics registers (LATENCY-IP Section 4, "two AXI Lite Slave
-- interfaces").
--
-- Every corner case (ack without irq, second irq before ack, counter
-- saturation, RAM full, we = 0, reset values, alarm clearing) and the full
-- register map are specified in ../README.md; the cocotb test bench in
-- ../tests checks this file against the Python reference model
-- irqlab.measure.ipmodel cycle by cycle.
--
-- Written from scratch for irqlab; single clock domain, synchronous
-- active-high reset, no vendor primitives (the RAM is inferred).

library ieee;
use ieee.std_logic_1164.all;
use ieee.numeric_std.all;

entity latency_ip is
  generic (
    CNT_WIDTH      : positive range 2 to 24 := 16;   -- latency/statistics width
    DEPTH          : positive range 1 to 2**20 := 512;  -- sample RAM entries
    SYNC_STAGES    : natural range 0 to 4 := 2;   -- synchronizer flops on irq_in/ack_in
    S00_ADDR_WIDTH : positive := 11;              -- byte address bits decoded by s00
    S01_ADDR_WIDTH : positive := 6                -- byte address bits decoded by s01
  );
  port (
    clk    : in  std_logic;
    rst    : in  std_logic;                       -- synchronous, active high
    irq_in : in  std_logic;                       -- start of the measured interval
    ack_in : in  std_logic;                       -- end of the measured interval
    alarm  : out std_logic;                       -- sticky: a latency exceeded alarm_lat

    -- s00: sample RAM (read only)
    s00_axi_awaddr  : in  std_logic_vector(S00_ADDR_WIDTH - 1 downto 0);
    s00_axi_awprot  : in  std_logic_vector(2 downto 0);
    s00_axi_awvalid : in  std_logic;
    s00_axi_awready : out std_logic;
    s00_axi_wdata   : in  std_logic_vector(31 downto 0);
    s00_axi_wstrb   : in  std_logic_vector(3 downto 0);
    s00_axi_wvalid  : in  std_logic;
    s00_axi_wready  : out std_logic;
    s00_axi_bresp   : out std_logic_vector(1 downto 0);
    s00_axi_bvalid  : out std_logic;
    s00_axi_bready  : in  std_logic;
    s00_axi_araddr  : in  std_logic_vector(S00_ADDR_WIDTH - 1 downto 0);
    s00_axi_arprot  : in  std_logic_vector(2 downto 0);
    s00_axi_arvalid : in  std_logic;
    s00_axi_arready : out std_logic;
    s00_axi_rdata   : out std_logic_vector(31 downto 0);
    s00_axi_rresp   : out std_logic_vector(1 downto 0);
    s00_axi_rvalid  : out std_logic;
    s00_axi_rready  : in  std_logic;

    -- s01: control and statistics registers
    s01_axi_awaddr  : in  std_logic_vector(S01_ADDR_WIDTH - 1 downto 0);
    s01_axi_awprot  : in  std_logic_vector(2 downto 0);
    s01_axi_awvalid : in  std_logic;
    s01_axi_awready : out std_logic;
    s01_axi_wdata   : in  std_logic_vector(31 downto 0);
    s01_axi_wstrb   : in  std_logic_vector(3 downto 0);
    s01_axi_wvalid  : in  std_logic;
    s01_axi_wready  : out std_logic;
    s01_axi_bresp   : out std_logic_vector(1 downto 0);
    s01_axi_bvalid  : out std_logic;
    s01_axi_bready  : in  std_logic;
    s01_axi_araddr  : in  std_logic_vector(S01_ADDR_WIDTH - 1 downto 0);
    s01_axi_arprot  : in  std_logic_vector(2 downto 0);
    s01_axi_arvalid : in  std_logic;
    s01_axi_arready : out std_logic;
    s01_axi_rdata   : out std_logic_vector(31 downto 0);
    s01_axi_rresp   : out std_logic_vector(1 downto 0);
    s01_axi_rvalid  : out std_logic;
    s01_axi_rready  : in  std_logic
  );
end entity latency_ip;

architecture rtl of latency_ip is

  constant RESP_OKAY   : std_logic_vector(1 downto 0) := "00";
  constant RESP_SLVERR : std_logic_vector(1 downto 0) := "10";

  -- s01 register word indices (byte offset / 4); see ../README.md
  constant REG_CTRL      : natural := 0;   -- 0x00 RW  bit0 we, bit1 clear (self-clearing)
  constant REG_ALARM_LAT : natural := 1;   -- 0x04 RW  alarm threshold (cycles)
  constant REG_LAST      : natural := 2;   -- 0x08 RO
  constant REG_MAX       : natural := 3;   -- 0x0C RO
  constant REG_MIN       : natural := 4;   -- 0x10 RO
  constant REG_NUM       : natural := 5;   -- 0x14 RO  32-bit, saturating
  constant REG_STATUS    : natural := 6;   -- 0x18 RO / W1C
  constant REG_INFO      : natural := 7;   -- 0x1C RO  [7:0] CNT_WIDTH, [31:8] DEPTH
  constant REG_ID        : natural := 8;   -- 0x20 RO  "LAT1"
  constant IP_ID         : std_logic_vector(31 downto 0) := x"4C415431";

  -- STATUS bits
  constant ST_ALARM   : natural := 0;  -- sticky, W1C
  constant ST_FULL    : natural := 1;  -- RAM full; cleared by CTRL.clear
  constant ST_SAT     : natural := 2;  -- sticky, W1C: a latency saturated the counter
  constant ST_ORPHAN  : natural := 3;  -- sticky, W1C: ack_in edge with nothing pending
  constant ST_OVERRUN : natural := 4;  -- sticky, W1C: irq_in edge while one was pending
  constant ST_PENDING : natural := 5;  -- live: a measurement is in progress
  constant W1C_MASK   : std_logic_vector(4 downto 0) := "11101";

  constant CNT_MAX : unsigned(CNT_WIDTH - 1 downto 0) := (others => '1');
  constant NUM_MAX : unsigned(31 downto 0) := (others => '1');
  constant RAM_AW  : natural := S00_ADDR_WIDTH - 2;

  subtype sample_t is unsigned(CNT_WIDTH - 1 downto 0);
  type ram_t is array (0 to DEPTH - 1) of std_logic_vector(CNT_WIDTH - 1 downto 0);
  signal ram : ram_t := (others => (others => '0'));

  -- input conditioning
  signal irq_s, ack_s : std_logic;
  signal irq_prev, ack_prev : std_logic := '1';
  signal irq_rise, ack_rise : std_logic;

  -- measurement state and statistics
  signal we        : std_logic := '0';
  signal alarm_lat : sample_t := (others => '1');
  signal pending   : std_logic := '0';
  signal cnt       : sample_t := (others => '0');
  signal last_r    : sample_t := (others => '0');
  signal max_r     : sample_t := (others => '0');
  signal min_r     : sample_t := (others => '1');
  signal num_r     : unsigned(31 downto 0) := (others => '0');
  signal wptr      : natural range 0 to DEPTH - 1 := 0;
  signal full_f    : std_logic := '0';
  signal alarm_f, sat_f, orphan_f, overrun_f : std_logic := '0';

  -- one-cycle commands from the s01 write channel to the measurement process
  signal clear_cmd : std_logic := '0';
  signal w1c_cmd   : std_logic_vector(4 downto 0) := (others => '0');

  -- s00 channel state
  signal s00_aw_full, s00_w_full, s00_bvalid_r, s00_rvalid_r : std_logic := '0';
  signal s00_bresp_r, s00_rresp_r : std_logic_vector(1 downto 0) := RESP_OKAY;
  signal s00_rdata_r : std_logic_vector(31 downto 0) := (others => '0');

  -- s01 channel state
  signal s01_aw_full, s01_w_full, s01_bvalid_r, s01_rvalid_r : std_logic := '0';
  signal s01_awaddr_r : std_logic_vector(S01_ADDR_WIDTH - 1 downto 0) := (others => '0');
  signal s01_wdata_r  : std_logic_vector(31 downto 0) := (others => '0');
  signal s01_wstrb_r  : std_logic_vector(3 downto 0) := (others => '0');
  signal s01_bresp_r, s01_rresp_r : std_logic_vector(1 downto 0) := RESP_OKAY;
  signal s01_rdata_r  : std_logic_vector(31 downto 0) := (others => '0');

  -- apply byte strobes to a register image
  function merge(old : std_logic_vector(31 downto 0); data : std_logic_vector(31 downto 0);
                 strb : std_logic_vector(3 downto 0)) return std_logic_vector is
    variable r : std_logic_vector(31 downto 0) := old;
  begin
    for b in 0 to 3 loop
      if strb(b) = '1' then
        r(8 * b + 7 downto 8 * b) := data(8 * b + 7 downto 8 * b);
      end if;
    end loop;
    return r;
  end function;

begin

  assert 2 ** RAM_AW >= DEPTH
    report "latency_ip: S00_ADDR_WIDTH too small for DEPTH" severity failure;
  assert S01_ADDR_WIDTH >= 6
    report "latency_ip: S01_ADDR_WIDTH must be at least 6" severity failure;

  ---------------------------------------------------------------------------
  -- Input synchronizers and rising-edge detectors. Both inputs go through
  -- the same number of flops, so the measured difference (LATENCY-IP Eq. 2)
  -- is unaffected by SYNC_STAGES.
  ---------------------------------------------------------------------------
  g_sync : if SYNC_STAGES > 0 generate
    signal irq_pipe, ack_pipe : std_logic_vector(SYNC_STAGES - 1 downto 0) := (others => '0');
  begin
    pipe : process (clk)
    begin
      if rising_edge(clk) then
        irq_pipe <= irq_pipe(SYNC_STAGES - 2 downto 0) & irq_in;
        ack_pipe <= ack_pipe(SYNC_STAGES - 2 downto 0) & ack_in;
      end if;
    end process;
    irq_s <= irq_pipe(SYNC_STAGES - 1);
    ack_s <= ack_pipe(SYNC_STAGES - 1);
  end generate;

  g_nosync : if SYNC_STAGES = 0 generate
    irq_s <= irq_in;
    ack_s <= ack_in;
  end generate;

  edges : process (clk)
  begin
    if rising_edge(clk) then
      if rst = '1' then
        -- A line already high when reset is released is not an edge.
        irq_prev <= '1';
        ack_prev <= '1';
      else
        irq_prev <= irq_s;
        ack_prev <= ack_s;
      end if;
    end if;
  end process;

  irq_rise <= irq_s and not irq_prev;
  ack_rise <= ack_s and not ack_prev;

  ---------------------------------------------------------------------------
  -- Measurement: counter, statistics, sample RAM, flags.
  ---------------------------------------------------------------------------
  measure : process (clk)
    variable rec   : boolean;
    variable value : sample_t;
  begin
    if rising_edge(clk) then
      if rst = '1' then
        pending   <= '0';
        cnt       <= (others => '0');
        last_r    <= (others => '0');
        max_r     <= (others => '0');
        min_r     <= (others => '1');   -- "no sample yet": largest value
        num_r     <= (others => '0');
        wptr      <= 0;
        full_f    <= '0';
        alarm_f   <= '0';
        sat_f     <= '0';
        orphan_f  <= '0';
        overrun_f <= '0';
      else
        rec   := false;
        value := (others => '0');

        if we = '1' then
          if pending = '1' then
            if ack_rise = '1' then
              rec   := true;
              value := cnt;             -- cycles since the irq_in edge
              if irq_rise = '1' then    -- a new interval starts on the same edge
                cnt <= to_unsigned(1, CNT_WIDTH);
              else
                pending <= '0';
              end if;
            else
              if irq_rise = '1' then    -- keep measuring from the first edge
                overrun_f <= '1';
              end if;
              if cnt /= CNT_MAX then
                cnt <= cnt + 1;
              end if;
            end if;
          else
            if irq_rise = '1' and ack_rise = '1' then
              rec   := true;            -- both edges on the same clock: 0 cycles
              value := (others => '0');
            elsif irq_rise = '1' then
              pending <= '1';
              cnt     <= to_unsigned(1, CNT_WIDTH);
            elsif ack_rise = '1' then
              orphan_f <= '1';
            end if;
          end if;
        else
          pending <= '0';               -- we = 0 abandons an open interval
        end if;

        if rec then
          last_r <= value;
          if value > max_r then
            max_r <= value;
          end if;
          if value < min_r then
            min_r <= value;
          end if;
          if num_r /= NUM_MAX then
            num_r <= num_r + 1;
          end if;
          if full_f = '0' then
            ram(wptr) <= std_logic_vector(value);
            if wptr = DEPTH - 1 then
              full_f <= '1';
            else
              wptr <= wptr + 1;
            end if;
          end if;
        end if;

        -- sticky flags: setting wins over a write-1-to-clear in the same cycle
        if rec and value > alarm_lat then
          alarm_f <= '1';
        elsif w1c_cmd(ST_ALARM) = '1' then
          alarm_f <= '0';
        end if;
        if rec and value = CNT_MAX then
          sat_f <= '1';
        elsif w1c_cmd(ST_SAT) = '1' then
          sat_f <= '0';
        end if;
        if we = '1' and pending = '0' and ack_rise = '1' and irq_rise = '0' then
          null;                          -- set above
        elsif w1c_cmd(ST_ORPHAN) = '1' then
          orphan_f <= '0';
        end if;
        if we = '1' and pending = '1' and ack_rise = '0' and irq_rise = '1' then
          null;                          -- set above
        elsif w1c_cmd(ST_OVERRUN) = '1' then
          overrun_f <= '0';
        end if;

        -- CTRL.clear restarts the statistics; it wins over everything above
        if clear_cmd = '1' then
          pending   <= '0';
          cnt       <= (others => '0');
          last_r    <= (others => '0');
          max_r     <= (others => '0');
          min_r     <= (others => '1');
          num_r     <= (others => '0');
          wptr      <= 0;
          full_f    <= '0';
          alarm_f   <= '0';
          sat_f     <= '0';
          orphan_f  <= '0';
          overrun_f <= '0';
        end if;
      end if;
    end if;
  end process;

  alarm <= alarm_f;

  ---------------------------------------------------------------------------
  -- s00: AXI4-Lite slave over the sample RAM. Reads of entry i at byte
  -- offset 4*i return the sample zero-extended; indices >= DEPTH answer
  -- SLVERR. Every write answers SLVERR and changes nothing.
  ---------------------------------------------------------------------------
  s00_axi_awready <= not s00_aw_full;
  s00_axi_wready  <= not s00_w_full;
  s00_axi_bvalid  <= s00_bvalid_r;
  s00_axi_bresp   <= s00_bresp_r;
  s00_axi_arready <= not s00_rvalid_r;
  s00_axi_rvalid  <= s00_rvalid_r;
  s00_axi_rresp   <= s00_rresp_r;
  s00_axi_rdata   <= s00_rdata_r;

  s00 : process (clk)
    variable idx : natural;
  begin
    if rising_edge(clk) then
      if rst = '1' then
        s00_aw_full  <= '0';
        s00_w_full   <= '0';
        s00_bvalid_r <= '0';
        s00_bresp_r  <= RESP_OKAY;
        s00_rvalid_r <= '0';
        s00_rresp_r  <= RESP_OKAY;
        s00_rdata_r  <= (others => '0');
      else
        -- write channel: accept address and data independently, then respond
        if s00_axi_awvalid = '1' and s00_aw_full = '0' then
          s00_aw_full <= '1';
        end if;
        if s00_axi_wvalid = '1' and s00_w_full = '0' then
          s00_w_full <= '1';
        end if;
        if s00_bvalid_r = '1' then
          if s00_axi_bready = '1' then
            s00_bvalid_r <= '0';
          end if;
        elsif s00_aw_full = '1' and s00_w_full = '1' then
          s00_aw_full  <= '0';
          s00_w_full   <= '0';
          s00_bvalid_r <= '1';
          s00_bresp_r  <= RESP_SLVERR;
        end if;

        -- read channel: registered RAM read (block-RAM friendly)
        if s00_rvalid_r = '1' then
          if s00_axi_rready = '1' then
            s00_rvalid_r <= '0';
          end if;
        elsif s00_axi_arvalid = '1' then
          idx := to_integer(unsigned(s00_axi_araddr(S00_ADDR_WIDTH - 1 downto 2)));
          s00_rvalid_r <= '1';
          if idx < DEPTH then
            s00_rdata_r <= (others => '0');
            s00_rdata_r(CNT_WIDTH - 1 downto 0) <= ram(idx);
            s00_rresp_r <= RESP_OKAY;
          else
            s00_rdata_r <= (others => '0');
            s00_rresp_r <= RESP_SLVERR;
          end if;
        end if;
      end if;
    end if;
  end process;

  ---------------------------------------------------------------------------
  -- s01: AXI4-Lite slave over the control and statistics registers.
  ---------------------------------------------------------------------------
  s01_axi_awready <= not s01_aw_full;
  s01_axi_wready  <= not s01_w_full;
  s01_axi_bvalid  <= s01_bvalid_r;
  s01_axi_bresp   <= s01_bresp_r;
  s01_axi_arready <= not s01_rvalid_r;
  s01_axi_rvalid  <= s01_rvalid_r;
  s01_axi_rresp   <= s01_rresp_r;
  s01_axi_rdata   <= s01_rdata_r;

  s01 : process (clk)
    variable reg  : natural;
    variable word : std_logic_vector(31 downto 0);
  begin
    if rising_edge(clk) then
      clear_cmd <= '0';
      w1c_cmd   <= (others => '0');
      if rst = '1' then
        s01_aw_full  <= '0';
        s01_w_full   <= '0';
        s01_bvalid_r <= '0';
        s01_bresp_r  <= RESP_OKAY;
        s01_rvalid_r <= '0';
        s01_rresp_r  <= RESP_OKAY;
        s01_rdata_r  <= (others => '0');
        s01_awaddr_r <= (others => '0');
        s01_wdata_r  <= (others => '0');
        s01_wstrb_r  <= (others => '0');
        we           <= '0';
        alarm_lat    <= (others => '1');  -- cannot be exceeded: alarm disabled
      else
        if s01_axi_awvalid = '1' and s01_aw_full = '0' then
          s01_aw_full  <= '1';
          s01_awaddr_r <= s01_axi_awaddr;
        end if;
        if s01_axi_wvalid = '1' and s01_w_full = '0' then
          s01_w_full  <= '1';
          s01_wdata_r <= s01_axi_wdata;
          s01_wstrb_r <= s01_axi_wstrb;
        end if;
        if s01_bvalid_r = '1' then
          if s01_axi_bready = '1' then
            s01_bvalid_r <= '0';
          end if;
        elsif s01_aw_full = '1' and s01_w_full = '1' then
          s01_aw_full  <= '0';
          s01_w_full   <= '0';
          s01_bvalid_r <= '1';
          s01_bresp_r  <= RESP_OKAY;
          reg := to_integer(unsigned(s01_awaddr_r(5 downto 2)));
          -- if/elsif rather than case: GHDL 2.0's Verilog output of a case
          -- without a default makes yosys infer latches
          if reg = REG_CTRL then
            if s01_wstrb_r(0) = '1' then
              we        <= s01_wdata_r(0);
              clear_cmd <= s01_wdata_r(1);
            end if;
          elsif reg = REG_ALARM_LAT then
            word := (others => '0');
            word(CNT_WIDTH - 1 downto 0) := std_logic_vector(alarm_lat);
            word := merge(word, s01_wdata_r, s01_wstrb_r);
            alarm_lat <= unsigned(word(CNT_WIDTH - 1 downto 0));
          elsif reg = REG_STATUS then
            if s01_wstrb_r(0) = '1' then
              w1c_cmd <= s01_wdata_r(4 downto 0) and W1C_MASK;
            end if;
          else
            s01_bresp_r <= RESP_SLVERR;       -- read-only or unmapped
          end if;
        end if;

        if s01_rvalid_r = '1' then
          if s01_axi_rready = '1' then
            s01_rvalid_r <= '0';
          end if;
        elsif s01_axi_arvalid = '1' then
          reg  := to_integer(unsigned(s01_axi_araddr(5 downto 2)));
          word := (others => '0');
          s01_rresp_r  <= RESP_OKAY;
          s01_rvalid_r <= '1';
          if reg = REG_CTRL then
            word(0) := we;
          elsif reg = REG_ALARM_LAT then
            word(CNT_WIDTH - 1 downto 0) := std_logic_vector(alarm_lat);
          elsif reg = REG_LAST then
            word(CNT_WIDTH - 1 downto 0) := std_logic_vector(last_r);
          elsif reg = REG_MAX then
            word(CNT_WIDTH - 1 downto 0) := std_logic_vector(max_r);
          elsif reg = REG_MIN then
            word(CNT_WIDTH - 1 downto 0) := std_logic_vector(min_r);
          elsif reg = REG_NUM then
            word := std_logic_vector(num_r);
          elsif reg = REG_STATUS then
            word(ST_ALARM)   := alarm_f;
            word(ST_FULL)    := full_f;
            word(ST_SAT)     := sat_f;
            word(ST_ORPHAN)  := orphan_f;
            word(ST_OVERRUN) := overrun_f;
            word(ST_PENDING) := pending;
          elsif reg = REG_INFO then
            word(7 downto 0)  := std_logic_vector(to_unsigned(CNT_WIDTH, 8));
            word(31 downto 8) := std_logic_vector(to_unsigned(DEPTH, 24));
          elsif reg = REG_ID then
            word := IP_ID;
          else
            s01_rresp_r <= RESP_SLVERR;
          end if;
          s01_rdata_r <= word;
        end if;
      end if;
    end if;
  end process;

end architecture rtl;
